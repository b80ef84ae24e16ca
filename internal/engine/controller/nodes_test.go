package controller

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestDrainAndRemoveNodes: a drain records its start and the replicas the
// node held, takes no new replicas, and is refused when too few active nodes
// would be left; removal is refused while the node holds a replica or a task
// moves one of its replicas, and a removed id is never registered again.
func TestDrainAndRemoveNodes(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	if r := update(t, s, 1, bootstrapCmd(t, 4, 1, 3)); !r.OK { // group 1 on nodes 1,2,3; node 4 empty
		t.Fatalf("bootstrap: %+v", r)
	}
	if r := update(t, s, 2, command(t, Command{DrainNode: &DrainNode{ID: 9}})); r.OK || r.Code != slotstore.CodeNotFound {
		t.Fatalf("drain of an unknown node: %+v", r)
	}
	if r := update(t, s, 3, command(t, Command{DrainNode: &DrainNode{ID: 3}})); !r.OK {
		t.Fatalf("drain node 3: %+v", r)
	}
	n3 := s.Snapshot().Nodes[3]
	if n3.State != NodeDraining || n3.DrainStartedAtMs != 2000 || n3.DrainReplicas != 1 {
		t.Fatalf("node 3 after drain: %+v", n3)
	}
	if r := update(t, s, 4, command(t, Command{DrainNode: &DrainNode{ID: 3}})); !r.OK {
		t.Fatalf("drain again: %+v", r)
	}
	// A registration finished again (a retried join) does not undo it.
	if r := update(t, s, 4, command(t, Command{SetNodeState: &SetNodeState{ID: 3, State: NodeActive}})); !r.OK || s.Snapshot().Nodes[3].State != NodeDraining {
		t.Fatalf("active again while draining: %+v, state %s", r, s.Snapshot().Nodes[3].State)
	}
	// Two drains leave two active nodes for three replicas a group: refused.
	if r := update(t, s, 5, command(t, Command{DrainNode: &DrainNode{ID: 2}})); r.OK || r.Code != slotstore.CodeFailedPrecondition {
		t.Fatalf("second drain: %+v", r)
	}
	// A draining node takes no replicas.
	if r := update(t, s, 6, command(t, Command{CreateMove: &CreateMove{Group: 1, From: 1, To: 3}})); r.OK {
		t.Fatalf("move onto a draining node: %+v", r)
	}
	if r := update(t, s, 7, command(t, Command{RemoveNode: &RemoveNode{ID: 3}})); r.OK || r.Code != slotstore.CodeFailedPrecondition {
		t.Fatalf("remove while holding a replica: %+v", r)
	}
	mv := update(t, s, 8, command(t, Command{CreateMove: &CreateMove{Group: 1, From: 3, To: 4}}))
	if !mv.OK {
		t.Fatalf("move off node 3: %+v", mv)
	}
	for i, phase := range movePhases[:len(movePhases)-1] {
		next := movePhases[i+1]
		if phase == PhaseRemoveOld {
			if r := update(t, s, uint64(9+i), command(t, Command{RemoveNode: &RemoveNode{ID: 3}})); r.OK {
				t.Fatalf("remove while its replica move runs: %+v", r)
			}
		}
		if r := update(t, s, uint64(9+i), command(t, Command{AdvanceTask: &AdvanceTask{ID: mv.TaskID, ExpectedPhase: phase, Phase: next}})); !r.OK {
			t.Fatalf("advance %s: %+v", phase, r)
		}
	}
	if got := s.Snapshot().ReplicasOn(3); got != 0 {
		t.Fatalf("node 3 holds %d replicas after the move", got)
	}
	if r := update(t, s, 20, command(t, Command{RemoveNode: &RemoveNode{ID: 3}})); !r.OK {
		t.Fatalf("remove the drained node: %+v", r)
	}
	if st := s.Snapshot(); st.Nodes[3].State != NodeRemoved {
		t.Fatalf("node 3: %+v", st.Nodes[3])
	}
	raft := s.Snapshot().Nodes[3].RaftAddr
	if r := update(t, s, 21, command(t, Command{RegisterNode: &RegisterNode{Node: Node{ID: 3, RaftAddr: raft}}})); r.OK {
		t.Fatalf("a removed id registered again: %+v", r)
	}
	if r := update(t, s, 22, command(t, Command{DrainNode: &DrainNode{ID: 3}})); r.OK {
		t.Fatalf("drain of a removed node: %+v", r)
	}
}

// TestBalancerPause: the pause is replicated with the time it changed.
func TestBalancerPause(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	if r := update(t, s, 1, bootstrapCmd(t, 3, 1, 3)); !r.OK {
		t.Fatalf("bootstrap: %+v", r)
	}
	if s.Snapshot().Balancer.Paused {
		t.Fatal("the balancer starts paused")
	}
	update(t, s, 2, command(t, Command{SetBalancer: &SetBalancer{Paused: true}}))
	if b := s.Snapshot().Balancer; !b.Paused || b.ChangedAtMs != 2000 {
		t.Fatalf("after pause: %+v", b)
	}
}
