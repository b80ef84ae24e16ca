package controller

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestNodeOfReplicaKnowsAMovesNewReplica: a move's new replica is a Raft
// voter (and, the move handing it the leadership, often the leader) from
// its promotion until the move's commit names it a desired peer; routers
// map a leader's replica id to its node through this, and a group whose
// leader they cannot place is leaderless to every client (found by
// internal/chaos: a move interrupted after remove_old left its group
// unroutable). The mapping holds in every phase and after the move failed.
func TestNodeOfReplicaKnowsAMovesNewReplica(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	if r := update(t, s, 1, bootstrapCmd(t, 4, 1, 3)); !r.OK { // group 1 on nodes 1,2,3
		t.Fatalf("bootstrap: %+v", r)
	}
	old := s.Snapshot().Groups[1].Peers[3]
	mv := update(t, s, 2, command(t, Command{CreateMove: &CreateMove{Group: 1, From: 3, To: 4}}))
	if !mv.OK {
		t.Fatalf("move: %+v", mv)
	}
	nu := s.Snapshot().Tasks[mv.TaskID].NewReplicaID
	check := func(when string) {
		t.Helper()
		st := s.Snapshot()
		if n, ok := st.NodeOfReplica(1, nu); !ok || n != 4 {
			t.Fatalf("%s: new replica %d → node %d, %v; want node 4", when, nu, n, ok)
		}
		if _, ok := st.NodeOfReplica(2, nu); ok {
			t.Fatalf("%s: replica %d placed in a group that does not exist", when, nu)
		}
		if n, ok := st.NodeOfReplica(1, 999); ok {
			t.Fatalf("%s: unknown replica 999 → node %d", when, n)
		}
		if n, ok := st.NodeOfReplica(1, old); st.Groups[1].Peers[3] == old && (!ok || n != 3) {
			t.Fatalf("%s: old replica %d → node %d, %v", when, old, n, ok)
		}
	}
	index := uint64(3)
	for i, phase := range movePhases[:len(movePhases)-1] {
		check(string(phase))
		if phase == PhaseCommit {
			// A move that fails here (its phase timed out) keeps its new
			// replica a voter: it is still node 4's.
			if r := update(t, s, index, command(t, Command{AdvanceTask: &AdvanceTask{ID: mv.TaskID, ExpectedPhase: phase, Status: TaskFailed, Error: "timed out"}})); !r.OK {
				t.Fatalf("fail at %s: %+v", phase, r)
			}
			index++
			check("failed at " + string(phase))
			if r := update(t, s, index, command(t, Command{CreateMove: &CreateMove{Group: 1, From: 3, To: 4}})); !r.OK {
				t.Fatalf("resume: %+v", r)
			}
			index++
		}
		if r := update(t, s, index, command(t, Command{AdvanceTask: &AdvanceTask{ID: mv.TaskID, ExpectedPhase: phase, Phase: movePhases[i+1]}})); !r.OK {
			t.Fatalf("advance %s: %+v", phase, r)
		}
		index++
	}
	check("done")
	if got := s.Snapshot().Groups[1].Peers[slotstore.NodeID(4)]; got != nu {
		t.Fatalf("node 4's desired replica %d, want %d", got, nu)
	}
}
