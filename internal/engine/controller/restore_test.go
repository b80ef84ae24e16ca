package controller

import (
	"reflect"
	"slices"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// restoreOf is a restore of groups 2, 5 and 9 (what splits and merges
// leave), slot s in the group at s mod 3.
func restoreOf() *Restore {
	r := &Restore{FromCluster: "old", BackupID: "b1", Groups: []slotstore.GroupID{2, 5, 9}, RouteRevision: 1_000_040,
		InitialGroupCount: 4, NextGroupID: 12, Audit: []AuditRecord{{Seq: 70, Action: "group.split"}}, AuditSeq: 70}
	for s := range slotstore.HashSlotCount {
		r.HashToGroup = append(r.HashToGroup, r.Groups[s%3])
	}
	return r
}

// TestBootstrapARestoredCluster: the founding of a restored cluster takes
// the backed-up groups and table, places the groups as Placement says (the
// rule the restore laid each node's store out by), keeps the old audit
// trail with the restore recorded after it, gives no group a genesis, and
// never reuses a group id of the old cluster.
func TestBootstrapARestoredCluster(t *testing.T) {
	s := NewStateMachine(nil)
	nodes := []Node{{ID: 3, RaftAddr: "a3"}, {ID: 1, RaftAddr: "a1"}, {ID: 2, RaftAddr: "a2"}, {ID: 4, RaftAddr: "a4"}}
	b := &Bootstrap{ClusterID: "new", ReplicationFactor: 3, Nodes: nodes, Restore: restoreOf()}
	if r := update(t, s, 1, encode(t, Command{TimeMs: 5000, Bootstrap: b})); !r.OK {
		t.Fatalf("bootstrap: %+v", r)
	}
	st := s.Snapshot()
	if st.ClusterID != "new" || st.RouteRevision != 1_000_040 || !slices.Equal(st.HashToGroup, b.Restore.HashToGroup) {
		t.Fatalf("cluster %q at revision %d", st.ClusterID, st.RouteRevision)
	}
	want := Placement([]slotstore.GroupID{2, 5, 9}, []slotstore.NodeID{1, 2, 3, 4}, 3)
	if !reflect.DeepEqual(want, []PlacedGroup{{2, []slotstore.NodeID{1, 2, 3}}, {5, []slotstore.NodeID{2, 3, 4}}, {9, []slotstore.NodeID{3, 4, 1}}}) {
		t.Fatalf("placement %v", want)
	}
	if len(st.Groups) != 3 {
		t.Fatalf("groups %v", st.GroupIDs())
	}
	for _, p := range want {
		g := st.Groups[p.Group]
		if g == nil || g.PreferredLeader != p.Nodes[0] || len(g.Peers) != 3 {
			t.Fatalf("group %d: %+v", p.Group, g)
		}
		for _, n := range p.Nodes {
			if g.Peers[n] != uint64(n) {
				t.Fatalf("group %d peers %v", p.Group, g.Peers)
			}
		}
		if st.GenesisSlots(p.Group) != nil {
			t.Fatalf("group %d of a restored cluster has a genesis %v", p.Group, st.GenesisSlots(p.Group))
		}
	}
	if st.Restored == nil || st.Restored.BackupID != "b1" || st.Restored.FromCluster != "old" || st.Restored.AtMs != 5000 {
		t.Fatalf("restored %+v", st.Restored)
	}
	if len(st.Audit) != 2 || st.Audit[0].Seq != 70 || st.Audit[1].Seq != 71 || st.Audit[1].Action != "cluster.restore" || st.AuditSeq != 71 {
		t.Fatalf("audit %+v (seq %d)", st.Audit, st.AuditSeq)
	}
	if st.InitialGroupCount != 4 || st.nextGroupID() != 12 {
		t.Fatalf("initial groups %d, next group id %d", st.InitialGroupCount, st.nextGroupID())
	}
}

// TestARestoreThatDoesNotHold: a restore whose table names a group it does
// not restore, whose groups are out of order, or whose table has no
// revision founds nothing.
func TestARestoreThatDoesNotHold(t *testing.T) {
	for name, spoil := range map[string]func(*Restore){
		"a slot in an unknown group": func(r *Restore) { r.HashToGroup[17] = 3 },
		"groups out of order":        func(r *Restore) { r.Groups = []slotstore.GroupID{5, 2, 9} },
		"a short table":              func(r *Restore) { r.HashToGroup = r.HashToGroup[:200] },
		"revision 0":                 func(r *Restore) { r.RouteRevision = 0 },
		"no groups":                  func(r *Restore) { r.Groups = nil },
	} {
		t.Run(name, func(t *testing.T) {
			s := NewStateMachine(nil)
			r := restoreOf()
			spoil(r)
			b := &Bootstrap{ClusterID: "new", ReplicationFactor: 3, Nodes: []Node{{ID: 1, RaftAddr: "a1"}}, Restore: r}
			if res := update(t, s, 1, encode(t, Command{TimeMs: 5000, Bootstrap: b})); res.OK {
				t.Fatalf("founded: %+v", res)
			}
			if s.Snapshot().Bootstrapped {
				t.Fatal("bootstrapped")
			}
		})
	}
}
