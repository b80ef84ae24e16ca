package controller

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestRecoverController: the record of the controller group's recovery
// applies the commands the survivor logged past its commit, in order (a
// refused one is counted, not fatal; a nested recovery is refused), marks
// the lost nodes removed though they hold replicas, and applies once: the
// same id proposed again changes nothing. A record naming no lost node, or
// the survivor among them, is refused.
func TestRecoverController(t *testing.T) {
	s := NewStateMachine(nil)
	if r := update(t, s, 1, bootstrapCmd(t, 4, 2, 3)); !r.OK {
		t.Fatal(r)
	}
	idx := uint64(1)
	apply := func(c Command) Result {
		t.Helper()
		idx++
		c.TimeMs = 9000
		return update(t, s, idx, encode(t, c))
	}
	for name, c := range map[string]*RecoverController{
		"no lost node":      {ID: "a", Node: 1, Index: 5},
		"the survivor lost": {ID: "a", Node: 1, Index: 5, Lost: []slotstore.NodeID{1, 2}},
		"no index":          {ID: "a", Node: 1, Lost: []slotstore.NodeID{2}},
		"too long a tail":   {ID: "a", Node: 1, Index: 5, Lost: []slotstore.NodeID{2}, Tail: make([][]byte, MaxControllerTail+1)},
	} {
		if r := apply(Command{RecoverController: c}); r.OK {
			t.Fatalf("%s: recorded %+v", name, r)
		}
	}
	tail := [][]byte{
		encode(t, Command{V: commandVersion, TimeMs: 8000, SetPreferred: &SetPreferred{Group: 1, Node: 3}}),
		encode(t, Command{V: commandVersion, TimeMs: 8001, DrainNode: &DrainNode{ID: 77}}), // refused: no such node
		encode(t, Command{V: commandVersion, TimeMs: 8002, RecoverController: &RecoverController{ID: "inner", Node: 1, Index: 1, Lost: []slotstore.NodeID{3}}}),
		[]byte("not a command"),
	}
	rc := &RecoverController{ID: "1-5-9000", Node: 1, Index: 5, Term: 2, Lost: []slotstore.NodeID{2, 3}, Tail: tail}
	if r := apply(Command{RecoverController: rc}); !r.OK {
		t.Fatal(r)
	}
	st := s.Snapshot()
	rec, ok := st.ControllerRecovered(rc.ID)
	if !ok || rec.TailApplied != 1 || rec.TailRefused != 3 || rec.AtMs != 9000 {
		t.Fatalf("recorded %+v", rec)
	}
	if st.Groups[1].PreferredLeader != 3 {
		t.Fatalf("the logged command was not applied: %+v", st.Groups[1])
	}
	for _, id := range []slotstore.NodeID{2, 3} {
		if st.Nodes[id].State != NodeRemoved || st.ReplicasOn(id) == 0 {
			t.Fatalf("node %d: %+v holding %d replicas", id, st.Nodes[id], st.ReplicasOn(id))
		}
	}
	if st.Nodes[1].State != NodeActive || st.Nodes[4].State != NodeActive {
		t.Fatalf("nodes 1 and 4: %+v %+v", st.Nodes[1], st.Nodes[4])
	}
	if _, ok := st.ControllerRecovered("inner"); ok {
		t.Fatal("a recovery nested in the tail was recorded")
	}
	// Proposed again (the base did not see it applied): nothing changes.
	if r := apply(Command{RecoverController: rc}); !r.OK {
		t.Fatal(r)
	}
	if again := s.Snapshot(); len(again.ControllerRecoveries) != 1 || again.Groups[1].PreferredSetAtMs != st.Groups[1].PreferredSetAtMs {
		t.Fatalf("applied twice: %+v", again.ControllerRecoveries)
	}
}
