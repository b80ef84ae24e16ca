package controller

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestPins: a manual command proposed with PinUntilMs pins the groups it
// names once it applies (a split its new group too, a merge both groups,
// a migration the slot's owner and its target); the same command without
// it (the balancer's) pins nothing; a refused command pins nothing; pins
// expire by time and are released by group or all at once.
func TestPins(t *testing.T) {
	s := NewStateMachine(nil)
	if r := update(t, s, 1, bootstrapCmd(t, 4, 3, 3)); !r.OK {
		t.Fatal(r)
	}
	idx := uint64(1)
	apply := func(c Command, timeMs int64) Result {
		t.Helper()
		idx++
		c.TimeMs = timeMs
		return update(t, s, idx, encode(t, c))
	}
	pins := func() map[slotstore.GroupID]Pin { return s.Snapshot().Pins }
	if r := apply(Command{SetPreferred: &SetPreferred{Group: 2, Node: 3}}, 1000); !r.OK || len(pins()) != 0 {
		t.Fatalf("the balancer's change pinned %v (%+v)", pins(), r)
	}
	if r := apply(Command{SetPreferred: &SetPreferred{Group: 1, Node: 2}, PinUntilMs: 5000}, 1000); !r.OK {
		t.Fatal(r)
	}
	if p := pins()[1]; p.UntilMs != 5000 || p.Why != "preferred_leader" || p.AtMs != 1000 {
		t.Fatalf("pin %+v", p)
	}
	if r := apply(Command{CreateMove: &CreateMove{Group: 3, From: 9, To: 4}, PinUntilMs: 5000}, 1000); r.OK || pins()[3].UntilMs != 0 {
		t.Fatalf("a refused move pinned its group: %+v %v", r, pins())
	}
	r := apply(Command{CreateSplit: &CreateSplit{Group: 2}, PinUntilMs: 6000}, 2000)
	if !r.OK {
		t.Fatal(r)
	}
	child := s.Snapshot().Tasks[r.TaskID].ToGroup
	if !s.Snapshot().PinnedAt(2, 5999) || !s.Snapshot().PinnedAt(child, 5999) || s.Snapshot().PinnedAt(child, 6000) {
		t.Fatalf("the split's pins: %v (new group %d)", pins(), child)
	}
	// Group 1's pin expired by this command's time: dropped.
	if r := apply(Command{SetBalancer: &SetBalancer{Paused: true}}, 5000); !r.OK {
		t.Fatal(r)
	}
	if _, ok := pins()[1]; ok || len(pins()) != 2 {
		t.Fatalf("pins after group 1's expired: %v", pins())
	}
	if r := apply(Command{ReleasePins: &ReleasePins{Groups: []slotstore.GroupID{child}}}, 5100); !r.OK || len(pins()) != 1 {
		t.Fatalf("release of group %d: %+v %v", child, r, pins())
	}
	if r := apply(Command{ReleasePins: &ReleasePins{}}, 5200); !r.OK || len(pins()) != 0 {
		t.Fatalf("release of every pin: %+v %v", r, pins())
	}
}
