package controller

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestHighWater: a group's high-water mark only rises; a mark of a group
// that does not exist is dropped; a recovery of the group (its new log
// numbered from the survivor's index) clears it.
func TestHighWater(t *testing.T) {
	s := NewStateMachine(nil)
	if r := update(t, s, 1, bootstrapCmd(t, 3, 2, 3)); !r.OK {
		t.Fatal(r)
	}
	idx := uint64(1)
	apply := func(c Command) Result {
		t.Helper()
		idx++
		c.TimeMs = 5000
		return update(t, s, idx, encode(t, c))
	}
	mark := func(g slotstore.GroupID, i uint64, n slotstore.NodeID) HighWaterMark {
		return HighWaterMark{Group: g, Index: i, Node: n, AtMs: int64(i)}
	}
	for _, marks := range [][]HighWaterMark{
		{mark(1, 40, 2), mark(2, 7, 1), mark(9, 99, 1)},
		{mark(1, 30, 3), mark(2, 8, 3)}, // group 1 lower: kept at 40
	} {
		if r := apply(Command{HighWater: &HighWater{Marks: marks}}); !r.OK {
			t.Fatal(r)
		}
	}
	st := s.Snapshot()
	if st.HighWater[1] != mark(1, 40, 2) || st.HighWater[2] != mark(2, 8, 3) || len(st.HighWater) != 2 {
		t.Fatalf("marks %+v", st.HighWater)
	}
	g := st.Groups[1]
	if r := apply(Command{RecoverGroup: &RecoverGroup{Group: 1, Node: 1, OldReplica: g.Peers[1], Replica: st.NextReplicaID, Index: 35}}); !r.OK {
		t.Fatal(r)
	}
	if st := s.Snapshot(); len(st.HighWater) != 1 || st.HighWater[2] != mark(2, 8, 3) {
		t.Fatalf("marks after group 1's recovery: %+v", st.HighWater)
	}
}
