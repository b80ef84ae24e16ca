package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// Replica moves under controller leader loss. The chaos cluster has four
// nodes and replication factor three, so every group has a node without a
// replica to move one to. The move fault starts a move (add the target as a
// learner, catch up, promote, remove the old voter, commit the new desired
// peers) and, once the controller leader is executing it, takes that leader
// away: restarts it or cuts it off until the next fault. A new controller
// leader must carry the task on from its replicated phase. A move already
// running is hit again instead; a failed one (TaskPhaseTimeout ran out under
// faults) is asked for again, which resumes it.
//
// At the end, with every fault healed, each move must end: failed moves are
// resumed until every task has succeeded (within a deadline), and then each
// group's Raft membership must agree with the controller's intent: exactly
// ReplicationFactor voters, the desired peers' replica ids, no learner, and
// a local replica on exactly the desired nodes.

// moveLog is what the schedule did with replica moves.
type moveLog struct {
	started, resumed, refused  int // moves asked for, failed moves asked for again, requests not accepted
	ctrlRestarts, ctrlIsolates int // controller leaders lost while a move ran
	restartsAfter              int // nodes restarted after they received or lost a replica
	done, failedOnce           int // at the end: moves succeeded, and of them resumed after a failure
	slots                      slotMoveLog
	violations                 []string
}

// injectMove starts (or resumes) a replica move, waits until the
// controller leader is carrying it out, and takes that leader away.
func injectMove(f *faultEnv) (string, func()) {
	st := f.tc.ctrlState()
	ml := f.moves
	var task slotstore.Task
	var what string
	if t, ok := moveTask(st, controller.TaskRunning, controller.TaskCancelling); ok {
		task, what = t.API(), fmt.Sprintf("move g%d n%d→n%d running (task %d, %s)", t.Group, t.From, t.To, t.ID, t.Phase)
	} else {
		var g slotstore.GroupID
		var from, to slotstore.NodeID
		if t, ok := moveTask(st, controller.TaskFailed); ok {
			g, from, to = t.Group, t.From, t.To
			what = "resume"
		} else {
			var why string
			if g, from, to, why = pickMove(f, st); why != "" {
				return why, nil
			}
			what = "move"
		}
		t, err := askMove(f, g, from, to)
		if err != nil {
			ml.refused++
			return fmt.Sprintf("%s g%d n%d→n%d refused (%v)", what, g, from, to, slotstore.ErrorCode(err)), nil
		}
		if what == "resume" {
			ml.resumed++
		} else {
			ml.started++
		}
		task, what = t, fmt.Sprintf("%s g%d n%d→n%d (task %d)", what, g, from, to, t.ID)
	}
	return loseControllerLeader(f, task, what)
}

// pickMove draws a group and one of its peers to move to a node without a
// replica of it; why says why there is none.
func pickMove(f *faultEnv, st *controller.State) (g slotstore.GroupID, from, to slotstore.NodeID, why string) {
	g = slotstore.GroupID(f.rng.Intn(f.tc.groups) + 1)
	grp, ok := st.Groups[g]
	if !ok {
		return g, 0, 0, fmt.Sprintf("move g%d: no intent yet", g)
	}
	peers := grp.PeerNodes()
	var free []slotstore.NodeID
	for i := 1; i <= f.tc.size(); i++ {
		if _, in := grp.Peers[slotstore.NodeID(i)]; !in {
			free = append(free, slotstore.NodeID(i))
		}
	}
	if len(free) == 0 || len(peers) == 0 {
		return g, 0, 0, fmt.Sprintf("move g%d: no free node", g)
	}
	return g, peers[f.rng.Intn(len(peers))], free[f.rng.Intn(len(free))], ""
}

// askMove asks a node, mostly the controller leader, for the move.
func askMove(f *faultEnv, g slotstore.GroupID, from, to slotstore.NodeID) (slotstore.Task, error) {
	via := f.tc.c.Nodes[f.rng.Intn(f.tc.size())]
	if l := f.tc.ctrlLeader(); l != 0 && f.rng.Intn(4) != 0 {
		via = f.tc.c.Nodes[l-1] // mostly the controller leader: a follower's proposal may wait out an election
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return via.Operator().CreateReplicaMove(ctx, g, from, to)
}

// injectMoveRestart moves a replica to a node without one and, once the
// move succeeded, restarts the node that received it on its data — and,
// half the time, the node it left (issue 51: a node that received a
// replica by a move panicked on every restart, replaying its own addition
// as non-voting over the voter it had become). A move still running or
// failed is left to the move fault; a move that does not end within its
// deadline is restarted over all the same (mid-move).
func injectMoveRestart(f *faultEnv) (string, func()) {
	st := f.tc.ctrlState()
	if t, ok := moveTask(st, controller.TaskRunning, controller.TaskCancelling, controller.TaskFailed); ok {
		return fmt.Sprintf("move+restart: task %d (g%d) not ended yet", t.ID, t.Group), nil
	}
	g, from, to, why := pickMove(f, st)
	if why != "" {
		return "move+restart: " + why, nil
	}
	// A task that moves the group's hash slots (a split under way) refuses
	// the move for a while: ask again until it ends, within a bound.
	var t slotstore.Task
	var err error
	testutil.Eventually(5*time.Second, 100*time.Millisecond, func() (bool, string) {
		t, err = askMove(f, g, from, to)
		return slotstore.ErrorCode(err) != slotstore.CodeConflict, ""
	})
	if err != nil {
		f.moves.refused++
		return fmt.Sprintf("move+restart g%d n%d→n%d refused (%v)", g, from, to, slotstore.ErrorCode(err)), nil
	}
	f.moves.started++
	end := "succeeded"
	if _, ok := testutil.Eventually(10*time.Second, 20*time.Millisecond, func() (bool, string) {
		got, ok := f.tc.ctrlState().Tasks[t.ID]
		return ok && got.Status == controller.TaskSucceeded, ""
	}); !ok {
		end = "not ended in 10s"
	}
	f.moves.restartsAfter++
	f.tc.restart(int(to) - 1)
	what := fmt.Sprintf("move g%d n%d→n%d (task %d, %s) + restart receiver n%d", g, from, to, t.ID, end, to)
	if f.rng.Intn(2) == 0 {
		f.moves.restartsAfter++
		f.tc.restart(int(from) - 1)
		what += fmt.Sprintf(" + restart n%d it left", from)
	}
	return what, nil
}

// loseControllerLeader waits (briefly) until the controller leader has taken
// a step of task, so that it loses its leadership in the middle of it, and
// then restarts it or cuts it off until the next fault.
func loseControllerLeader(f *faultEnv, task slotstore.Task, what string) (string, func()) {
	ml := f.moves
	// Not failing: the fault comes whether or not the step did.
	testutil.Eventually(time.Second, 20*time.Millisecond, func() (bool, string) {
		t, ok := f.tc.ctrlState().Tasks[task.ID]
		return !ok || t.Phase != task.Phase || t.Status != controller.TaskRunning, ""
	})
	phase := "?"
	if t, ok := f.tc.ctrlState().Tasks[task.ID]; ok {
		phase = string(t.Phase) + "/" + string(t.Status)
	}
	leader := f.tc.ctrlLeader()
	if leader == 0 {
		return fmt.Sprintf("%s at %s; no controller leader to lose", what, phase), nil
	}
	if f.rng.Intn(2) == 0 {
		ml.ctrlRestarts++
		f.tc.restart(int(leader) - 1)
		return fmt.Sprintf("%s at %s + restart controller leader n%d", what, phase, leader), nil
	}
	ml.ctrlIsolates++
	f.tc.c.Net.Isolate(leader)
	return fmt.Sprintf("%s at %s + isolate controller leader n%d", what, phase, leader), f.tc.c.Net.Heal
}

// moveTask returns the oldest replica move with one of the statuses.
func moveTask(st *controller.State, statuses ...slotstore.TaskStatus) (controller.Task, bool) {
	ids := slices.Sorted(maps.Keys(st.Tasks))
	for _, id := range ids {
		t := st.Tasks[id]
		if t.Kind == controller.TaskReplicaMove && slices.Contains(statuses, t.Status) {
			return *t, true
		}
	}
	return controller.Task{}, false
}

// settleMoves runs once every fault is healed: it resumes failed moves
// until every move has succeeded, then waits until every group's Raft
// membership agrees with the controller's desired peers. What does not
// happen within the deadlines is a violation.
func settleMoves(tc *testCluster, ml *moveLog, rf int) {
	resumedAt := map[uint64]int{} // task → attempt we last resumed
	var st *controller.State
	if _, ended := testutil.Eventually(60*time.Second, 100*time.Millisecond, func() (bool, string) {
		st = tc.ctrlState()
		running, failed := 0, 0
		for _, t := range st.Tasks {
			if t.Kind != controller.TaskReplicaMove {
				continue
			}
			switch t.Status {
			case controller.TaskRunning, controller.TaskCancelling:
				running++
			case controller.TaskFailed:
				failed++
				if resumedAt[t.ID] == t.Attempt {
					continue // asked already; the answer has not applied yet
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := tc.c.Nodes[int(t.ID)%tc.size()].Operator().CreateReplicaMove(ctx, t.Group, t.From, t.To)
				cancel()
				if err == nil {
					resumedAt[t.ID] = t.Attempt
					ml.resumed++
				}
			}
		}
		return running == 0 && failed == 0, ""
	}); !ended {
		for _, t := range st.Tasks {
			if t.Kind == controller.TaskReplicaMove && t.Status != controller.TaskSucceeded {
				ml.violations = append(ml.violations, fmt.Sprintf("task %d (g%d n%d→n%d) did not end within 60s after the faults: %s/%s attempt %d: %s; %s; %s",
					t.ID, t.Group, t.From, t.To, t.Phase, t.Status, t.Attempt, t.Error, taskTrail(st, *t), tc.groupsNow(t.Group)))
			}
		}
		return
	}
	st = tc.ctrlState()
	for _, t := range st.Tasks {
		if t.Kind == controller.TaskReplicaMove && t.Status == controller.TaskSucceeded {
			ml.done++
			if t.Attempt > 1 {
				ml.failedOnce++
			}
		}
	}
	var bad []string
	if _, agreed := testutil.Eventually(20*time.Second, 100*time.Millisecond, func() (bool, string) {
		bad = membershipMismatches(tc, rf)
		return len(bad) == 0, ""
	}); !agreed {
		ml.violations = append(ml.violations, bad...)
	}
}

// membershipMismatches compares every group's Raft membership, as its
// leader applies it, and the nodes' local replicas with the controller's
// desired peers.
func membershipMismatches(tc *testCluster, rf int) []string {
	st := tc.ctrlState()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	type local struct {
		node    slotstore.NodeID
		replica uint64
	}
	locals := map[slotstore.GroupID][]local{}
	leaders := map[slotstore.GroupID]slotstore.ReplicaStatus{}
	for _, n := range tc.c.Nodes {
		for _, rs := range n.LocalStatus(ctx).Replicas {
			locals[rs.Group] = append(locals[rs.Group], local{n.NodeID(), rs.ReplicaID})
			if rs.Voters != nil {
				if cur, ok := leaders[rs.Group]; !ok || rs.Term > cur.Term {
					leaders[rs.Group] = rs
				}
			}
		}
	}
	var bad []string
	for _, g := range st.GroupIDs() {
		desired := st.Groups[g].Peers
		want := slices.Sorted(maps.Values(desired))
		if len(desired) != rf {
			bad = append(bad, fmt.Sprintf("g%d: %d desired peers %v, replication factor %d", g, len(desired), desired, rf))
		}
		l, ok := leaders[g]
		if !ok {
			bad = append(bad, fmt.Sprintf("g%d: no leader reports its membership", g))
			continue
		}
		voters := slices.Sorted(maps.Keys(l.Voters))
		if !slices.Equal(voters, want) || len(l.NonVoters) > 0 {
			bad = append(bad, fmt.Sprintf("g%d: voters %v learners %v (leader n%d), desired replicas %v (peers %v)",
				g, voters, slices.Sorted(maps.Keys(l.NonVoters)), l.Node, want, desired))
		}
		var have []string
		match := len(locals[g]) == len(desired)
		for _, lr := range locals[g] {
			have = append(have, fmt.Sprintf("n%d:%d", lr.node, lr.replica))
			if desired[lr.node] != lr.replica {
				match = false
			}
		}
		if !match {
			sort.Strings(have)
			bad = append(bad, fmt.Sprintf("g%d: local replicas %v, desired peers %v", g, have, desired))
		}
	}
	return bad
}

// taskTrail is the last few decisions recorded about t's group, for a
// violation's report.
// groupsNow is what a stuck task's groups look like now, for its
// violation: the controller leader, and each node's replica of each group
// (replica id, the leader it knows, term, applied index, and the voters the
// group's leader applies).
func (tc *testCluster) groupsNow(groups ...slotstore.GroupID) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out := []string{fmt.Sprintf("controller leader n%d", tc.ctrlLeader())}
	for _, n := range tc.c.Nodes {
		for _, rs := range n.LocalStatus(ctx).Replicas {
			if !slices.Contains(groups, rs.Group) {
				continue
			}
			line := fmt.Sprintf("n%d g%d r%d leader r%d term %d applied %d", n.NodeID(), rs.Group, rs.ReplicaID, rs.LeaderReplica, rs.Term, rs.AppliedIndex)
			if rs.NonVoting {
				line += " learner"
			}
			if rs.Voters != nil {
				line += fmt.Sprintf(" voters %v", slices.Sorted(maps.Keys(rs.Voters)))
			}
			out = append(out, line)
		}
	}
	st := tc.ctrlState()
	for _, g := range groups {
		if grp, ok := st.Groups[g]; ok {
			out = append(out, fmt.Sprintf("g%d desired %v", g, grp.Peers))
		}
	}
	return "now: " + strings.Join(out, "; ")
}

func taskTrail(st *controller.State, t controller.Task) string {
	var out []string
	for _, d := range st.Decisions {
		if d.Group == t.Group && d.Kind == "task" {
			out = append(out, string(d.Reason)+": "+d.Detail)
		}
	}
	if len(out) > 4 {
		out = out[len(out)-4:]
	}
	return "last decisions: " + strings.Join(out, " | ")
}
