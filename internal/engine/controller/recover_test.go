package controller

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestRecoverGroup: the record of a lost-quorum recovery. The survivor's
// node holds the group as the prepared replica, every replica the group
// had is tombstoned (the survivor's old one too), a replica move on the
// group is cancelled and its new replica tombstoned, the next replica id
// moves on; a recovery naming a replica the node does not hold, or
// another id than the next one, or of a group whose hash slots a task
// moves, is refused.
func TestRecoverGroup(t *testing.T) {
	s := NewStateMachine(nil)
	if r := update(t, s, 1, bootstrapCmd(t, 4, 2, 3)); !r.OK {
		t.Fatal(r)
	}
	st := s.Snapshot()
	g := st.Groups[1] // nodes 1, 2, 3
	next := st.NextReplicaID
	idx := uint64(2)
	apply := func(c Command) Result {
		t.Helper()
		idx++
		c.TimeMs = 7000
		return update(t, s, idx, encode(t, c))
	}
	if r := apply(Command{CreateMove: &CreateMove{Group: 1, From: 1, To: 4}}); !r.OK {
		t.Fatal(r)
	}
	moving := s.Snapshot().Tasks[r0(t, s)]
	for name, c := range map[string]*RecoverGroup{
		"a replica the node does not hold": {Group: 1, Node: 3, OldReplica: 9, Replica: next + 1},
		"not the next replica id":          {Group: 1, Node: 3, OldReplica: g.Peers[3], Replica: next + 7},
		"an unknown group":                 {Group: 8, Node: 3, OldReplica: 3, Replica: next + 1},
	} {
		if r := apply(Command{RecoverGroup: c}); r.OK {
			t.Fatalf("%s: recorded %+v", name, r)
		}
	}
	next = s.Snapshot().NextReplicaID
	if r := apply(Command{RecoverGroup: &RecoverGroup{Group: 1, Node: 3, OldReplica: g.Peers[3], Replica: next, Index: 54, Lost: "nothing"}}); !r.OK {
		t.Fatal(r)
	}
	after := s.Snapshot()
	grp := after.Groups[1]
	if grp.Peers[3] != next || grp.PreferredLeader != 3 || grp.ConfigEpoch != g.ConfigEpoch+1 || after.NextReplicaID != next+1 {
		t.Fatalf("group after the recovery %+v, next replica id %d", grp, after.NextReplicaID)
	}
	for _, r := range []uint64{g.Peers[1], g.Peers[2], g.Peers[3], moving.NewReplicaID} {
		if _, dead := after.Tombstoned(1, r); !dead {
			t.Fatalf("replica %d not tombstoned: %+v", r, after.Tombstones)
		}
	}
	if _, dead := after.Tombstoned(1, next); dead {
		t.Fatal("the survivor's new replica is tombstoned")
	}
	if tk := after.Tasks[moving.ID]; tk.Status != TaskCancelled || tk.Error == "" {
		t.Fatalf("the move on the group: %+v", tk)
	}
	if len(after.Recoveries) != 1 || after.Recoveries[0].Index != 54 || after.Recoveries[0].AtMs != 7000 || len(after.Recoveries[0].Tombstoned) != 4 {
		t.Fatalf("recoveries %+v", after.Recoveries)
	}
	// A group whose hash slots a task moves is not recovered.
	tbl, err := after.Table()
	if err != nil {
		t.Fatal(err)
	}
	if r := apply(Command{SlotMigrate: &CreateSlotMigration{HashSlot: tbl.SlotsOf(2)[0], ToGroup: 1}}); !r.OK {
		t.Fatal(r)
	}
	g2 := after.Groups[2]
	var node slotstore.NodeID
	for n := range g2.Peers {
		node = n
	}
	if r := apply(Command{RecoverGroup: &RecoverGroup{Group: 2, Node: node, OldReplica: g2.Peers[node], Replica: after.NextReplicaID}}); r.OK || r.Code != slotstore.CodeFailedPrecondition {
		t.Fatalf("a recovery while a slot moves: %+v", r)
	}
}

// r0 is the id of the newest task.
func r0(t *testing.T, s *StateMachine) uint64 {
	t.Helper()
	ids := s.Snapshot().TaskIDs()
	if len(ids) == 0 {
		t.Fatal("no task")
	}
	return ids[len(ids)-1]
}

// TestTombstonesStayWhileNamed: beyond MaxTombstones the oldest go — but
// only those of replicas no group names as a desired peer any more.
func TestTombstonesStayWhileNamed(t *testing.T) {
	s := NewState()
	s.Groups[1] = &Group{ID: 1, Peers: map[slotstore.NodeID]uint64{2: 7}}
	s.Tombstones = append(s.Tombstones, Tombstone{Group: 1, Replica: 7, Node: 2}) // oldest, still named
	for i := range MaxTombstones + 9 {
		s.Tombstones = append(s.Tombstones, Tombstone{Group: 5, Replica: uint64(100 + i), Node: 3})
	}
	pruneTombstones(s)
	if len(s.Tombstones) != MaxTombstones {
		t.Fatalf("%d tombstones kept, want %d", len(s.Tombstones), MaxTombstones)
	}
	if _, dead := s.Tombstoned(1, 7); !dead {
		t.Fatal("the tombstone of a replica still named a desired peer was dropped")
	}
	if _, dead := s.Tombstoned(5, 100); dead {
		t.Fatal("the oldest unnamed tombstone stayed")
	}
}
