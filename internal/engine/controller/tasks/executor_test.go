package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// commitNode is a fake of the executor's node for a replica move at its
// commit phase: the group's membership can be made unreadable, and every
// advance is applied to the one task. Methods the commit step does not use
// are left to the embedded (nil) interface.
type commitNode struct {
	Node
	st         *controller.State
	membership error
	advances   []controller.AdvanceTask
	decisions  []slotstore.Decision
}

func (n *commitNode) Controller() *controller.State { return n.st }

func (n *commitNode) GroupLeader(slotstore.GroupID) slotstore.NodeID { return 0 }

func (n *commitNode) Membership(context.Context, MembershipRequest) (Membership, error) {
	if n.membership != nil {
		return Membership{}, n.membership
	}
	return Membership{Voters: map[uint64]string{1: "a", 2: "b", 4: "d"}}, nil
}

func (n *commitNode) Advance(_ context.Context, a controller.AdvanceTask) error {
	n.advances = append(n.advances, a)
	t := n.st.Tasks[a.ID]
	if a.CopiedTo != nil {
		t.CopiedTo = a.CopiedTo
	}
	if a.Phase != "" {
		t.Phase, t.CopiedTo = a.Phase, nil
	}
	if a.Status != "" {
		t.Status, t.Error, t.CopiedTo = a.Status, a.Error, nil
	}
	return nil
}

func (n *commitNode) Record(d slotstore.Decision) { n.decisions = append(n.decisions, d) }

func (n *commitNode) WakeLeader(slotstore.GroupID, slotstore.NodeID) {}

// TestMoveAtCommitIsNeverFailed: a replica move past its point of
// cancelling — remove_old, whose removal may have been applied, and commit,
// where Raft already has the new voter and not the old one — whose step
// cannot reach the group's membership for longer than the phase timeout
// keeps trying, and says so once in the decision log: a failed task would
// leave the desired peers and the membership apart, and free the group for
// a split or another move planned from the wrong peers, until someone asked
// for the same move again. It completes once it can; an earlier phase stuck
// as long fails its task as before.
func TestMoveAtCommitIsNeverFailed(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for _, phase := range []slotstore.TaskPhase{controller.PhaseRemoveOld, controller.PhaseCommit} {
		task := &controller.Task{ID: 7, Kind: controller.TaskReplicaMove, Group: 1, From: 3, To: 4, OldReplicaID: 3, NewReplicaID: 4,
			Phase: phase, Status: controller.TaskRunning, Attempt: 1, UpdatedAtMs: now.Add(-time.Hour).UnixMilli()}
		n := &commitNode{st: &controller.State{Tasks: map[uint64]*controller.Task{7: task}},
			membership: errors.New("route_not_ready: group 1 has no live leader")}
		e := New(Config{Node: n, PhaseTimeout: time.Minute, Now: func() time.Time { return now },
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

		for range 3 {
			e.Once(context.Background(), []controller.Task{*task})
		}
		if len(n.advances) != 0 || task.Status != controller.TaskRunning {
			t.Fatalf("%s stuck for an hour: advances %+v, status %s", phase, n.advances, task.Status)
		}
		if len(n.decisions) != 1 || n.decisions[0].Reason != slotstore.Reason("replica_move:"+string(phase)+"→stuck") ||
			!strings.Contains(n.decisions[0].Detail, "no live leader") {
			t.Fatalf("%s stuck for three rounds: decisions %+v, want one that says why", phase, n.decisions)
		}
		n.membership = nil
		e.Once(context.Background(), []controller.Task{*task})
		if task.Phase == phase || task.Status != controller.TaskRunning || len(n.advances) != 1 {
			t.Fatalf("after the membership answered: phase %s status %s, advances %+v", task.Phase, task.Status, n.advances)
		}
	}
	task := &controller.Task{ID: 7, Kind: controller.TaskReplicaMove, Group: 1, From: 3, To: 4, OldReplicaID: 3, NewReplicaID: 4,
		Status: controller.TaskRunning, UpdatedAtMs: now.Add(-time.Hour).UnixMilli()}
	n := &commitNode{st: &controller.State{Tasks: map[uint64]*controller.Task{7: task}}}
	e := New(Config{Node: n, PhaseTimeout: time.Minute, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

	// Before the point of no return, a phase stuck as long fails the task.
	task.Phase, task.Status, n.advances = controller.PhasePromote, controller.TaskRunning, nil
	n.membership = errors.New("route_not_ready: group 1 has no live leader")
	e.Once(context.Background(), []controller.Task{*task})
	if task.Status != controller.TaskFailed {
		t.Fatalf("a promotion stuck for an hour: status %s, advances %+v", task.Status, n.advances)
	}
}

// slotNode is a fake of the executor's node for a hash-slot migration:
// every command proposed to a group is logged, or refused while groupErr
// is set; reads of the source fail while readErr is set; advances are
// applied to the one task.
type slotNode struct {
	commitNode
	groupErr, readErr error
	proposed          []string
}

func (n *slotNode) ProposeToGroup(_ context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error) {
	if n.groupErr != nil {
		return meta.Result{}, n.groupErr
	}
	n.proposed = append(n.proposed, fmt.Sprintf("g%d %T", g, cmd))
	return meta.Result{}, nil
}

func (n *slotNode) Read(context.Context, meta.Query, meta.Consistency) (any, meta.ReadInfo, error) {
	if n.readErr != nil {
		return nil, meta.ReadInfo{}, n.readErr
	}
	return &meta.SlotChunk{Done: true, Revision: 5}, meta.ReadInfo{}, nil
}

// TestSlotHandoverIsNeverFailed: a hash-slot migration whose acquire or
// release cannot reach its groups for longer than the phase timeout keeps
// trying — the target may own the slot while the source holds it fenced;
// failing would leave it so with nobody to finish (make chaos found that)
// — and goes on once they answer; a copy stuck as long aborts the move
// instead: the fence lifted and the log dropped at the source, the copy
// dropped at the target, and the task failed.
func TestSlotHandoverIsNeverFailed(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	hs := slotstore.HashSlot(166)
	task := &controller.Task{ID: 9, Kind: controller.TaskSlotMigration, Group: 2, ToGroup: 3, HashSlot: &hs, Live: true,
		Status: controller.TaskRunning, UpdatedAtMs: now.Add(-time.Hour).UnixMilli()}
	unreachable := errors.New("route_not_ready: group 2 has no live leader")
	n := &slotNode{commitNode: commitNode{st: &controller.State{Tasks: map[uint64]*controller.Task{9: task}}},
		groupErr: unreachable, readErr: unreachable}
	e := New(Config{Node: n, PhaseTimeout: time.Minute, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

	for _, phase := range []slotstore.TaskPhase{controller.PhaseAcquire, controller.PhaseRelease} {
		task.Phase, task.Status = phase, controller.TaskRunning
		e.Once(context.Background(), []controller.Task{*task})
		if len(n.advances) != 0 || task.Status != controller.TaskRunning {
			t.Fatalf("%s stuck for an hour: advances %+v, status %s", phase, n.advances, task.Status)
		}
	}
	n.groupErr, n.readErr = nil, nil
	e.Once(context.Background(), []controller.Task{*task})
	if task.Phase != controller.PhaseSwitch || task.Status != controller.TaskRunning || len(n.advances) != 1 ||
		fmt.Sprint(n.proposed) != "[g2 *meta.ReleaseSlot]" {
		t.Fatalf("after the source answered: phase %s status %s, advances %+v, proposed %v", task.Phase, task.Status, n.advances, n.proposed)
	}

	// Before the acquire, a phase stuck as long aborts the move.
	task.Phase, n.advances, n.proposed, n.readErr = controller.PhaseCopy, nil, nil, unreachable
	e.Once(context.Background(), []controller.Task{*task})
	if task.Status != controller.TaskFailed ||
		fmt.Sprint(n.proposed) != "[g2 *meta.UnfenceSlot g2 *meta.UntrackSlot g3 *meta.DropImported]" {
		t.Fatalf("a copy stuck for an hour: status %s, proposed %v", task.Status, n.proposed)
	}
}

// rowsNode is a slot node whose source slot holds rows, exported one row a
// chunk after the key asked; it counts the rows imported into the target.
type rowsNode struct {
	slotNode
	rows     []string
	imported []string
}

func (n *rowsNode) Read(_ context.Context, q meta.Query, _ meta.Consistency) (any, meta.ReadInfo, error) {
	ex, ok := q.(*meta.ExportSlot)
	if !ok {
		return n.slotNode.Read(context.Background(), q, meta.Linearizable)
	}
	i := 0
	for i < len(n.rows) && n.rows[i] <= string(ex.After) {
		i++
	}
	if i == len(n.rows) {
		return &meta.SlotChunk{Done: true, Revision: 5}, meta.ReadInfo{}, nil
	}
	return &meta.SlotChunk{Rows: []meta.Row{{Key: []byte(n.rows[i]), Value: []byte("v")}}, Done: i == len(n.rows)-1, Revision: 5}, meta.ReadInfo{}, nil
}

func (n *rowsNode) ProposeToGroup(ctx context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error) {
	if imp, ok := cmd.(*meta.ImportRows); ok {
		for _, r := range imp.Rows {
			n.imported = append(n.imported, string(r.Key))
		}
	}
	return n.slotNode.ProposeToGroup(ctx, g, cmd)
}

// TestCopyGoesOnFromWhereItStopped: a slot's copy imports at most
// copyChunksPerStep chunks a step and keeps its position on the task, so a
// slot of any size moves a step at a time (a copy was one step, and one
// that outlasted the step's deadline started over every round); an
// executor that takes over (a failover) goes on from the position; every
// row is imported once.
func TestCopyGoesOnFromWhereItStopped(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	hs := slotstore.HashSlot(9)
	task := &controller.Task{ID: 3, Kind: controller.TaskSlotMigration, Group: 1, ToGroup: 2, HashSlot: &hs, Live: true,
		Phase: controller.PhaseCopy, Status: controller.TaskRunning, UpdatedAtMs: now.UnixMilli()}
	n := &rowsNode{slotNode: slotNode{commitNode: commitNode{st: &controller.State{Tasks: map[uint64]*controller.Task{3: task}}}}}
	for i := range 2*copyChunksPerStep + 22 {
		n.rows = append(n.rows, fmt.Sprintf("k%04d", i))
	}
	newExecutor := func() *Executor {
		return New(Config{Node: n, PhaseTimeout: time.Minute, Now: func() time.Time { return now },
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	newExecutor().Once(context.Background(), []controller.Task{*task})
	if task.Phase != controller.PhaseCopy || string(task.CopiedTo) != n.rows[copyChunksPerStep-1] || len(n.imported) != copyChunksPerStep {
		t.Fatalf("after one step: phase %s, copied to %q, %d rows imported", task.Phase, task.CopiedTo, len(n.imported))
	}
	newExecutor().Once(context.Background(), []controller.Task{*task}) // another controller leader
	if task.Phase != controller.PhaseCopy || string(task.CopiedTo) != n.rows[2*copyChunksPerStep-1] {
		t.Fatalf("after a step on a new leader: phase %s, copied to %q", task.Phase, task.CopiedTo)
	}
	newExecutor().Once(context.Background(), []controller.Task{*task})
	if task.Phase != controller.PhaseCatchUp || task.CopiedTo != nil {
		t.Fatalf("after the last rows: phase %s, copied to %q", task.Phase, task.CopiedTo)
	}
	if fmt.Sprint(n.imported) != fmt.Sprint(n.rows) {
		t.Fatalf("imported %d rows, not each of the %d once in order", len(n.imported), len(n.rows))
	}
}

// learnerNode is a fake of the executor's node for a replica move's
// catch-up: the group view shows the leader on node 1 and the learner on
// node 4 with the snapshot bytes its node reports; an advance that brings
// other snapshot bytes restarts the phase's clock, as the controller's does.
type learnerNode struct {
	commitNode
	now      *time.Time
	received uint64
}

func (n *learnerNode) Observe(context.Context) {}

func (n *learnerNode) Group(context.Context, slotstore.GroupID) (slotstore.GroupView, error) {
	return slotstore.GroupView{ID: 1, Leader: 1, Replicas: []slotstore.ReplicaView{
		{Node: 1, ReplicaID: 1, AppliedIndex: 500, LogLast: 500},
		{Node: 4, ReplicaID: 4, SnapshotBytes: n.received, Lag: 500},
	}}, nil
}

func (n *learnerNode) Advance(ctx context.Context, a controller.AdvanceTask) error {
	t := n.st.Tasks[a.ID]
	if a.SnapshotBytes != 0 && a.SnapshotBytes != t.SnapshotBytes {
		t.SnapshotBytes, t.UpdatedAtMs = a.SnapshotBytes, n.now.UnixMilli()
	}
	t.Error = a.Error
	return n.commitNode.Advance(ctx, a)
}

// TestCatchUpReceivingASnapshotIsProgress: a learner whose log and applied
// index stand still while its node receives the group's snapshot is not
// stuck — each step that sees more bytes received records them, which
// restarts the phase's clock — and a learner that receives nothing more
// for the phase timeout fails its move as before (the simulator's
// big-groups scenario: 11 GB groups at 50 MB/s failed every move).
func TestCatchUpReceivingASnapshotIsProgress(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	task := &controller.Task{ID: 7, Kind: controller.TaskReplicaMove, Group: 1, From: 3, To: 4, OldReplicaID: 3, NewReplicaID: 4,
		Phase: controller.PhaseCatchUp, Status: controller.TaskRunning, Attempt: 1, UpdatedAtMs: now.Add(-50 * time.Second).UnixMilli()}
	n := &learnerNode{commitNode: commitNode{st: &controller.State{Tasks: map[uint64]*controller.Task{7: task}}}, now: &now}
	e := New(Config{Node: n, PhaseTimeout: time.Minute, ActiveWithin: 5 * time.Second, MaxLag: 10, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for i := range 5 { // five minutes of a snapshot on its way, 1 GB a minute
		now = now.Add(time.Minute)
		n.received += 1 << 30
		e.Once(context.Background(), []controller.Task{*task})
		if task.Status != controller.TaskRunning || task.SnapshotBytes != n.received {
			t.Fatalf("minute %d, %d bytes received: status %s (%s), recorded %d", i+1, n.received, task.Status, task.Error, task.SnapshotBytes)
		}
	}
	if !strings.Contains(task.Error, "receiving a snapshot") {
		t.Fatalf("the task says %q, want why it waits", task.Error)
	}
	now = now.Add(30 * time.Second) // nothing more arrives
	e.Once(context.Background(), []controller.Task{*task})
	if task.Status != controller.TaskRunning {
		t.Fatalf("30 s without progress: status %s", task.Status)
	}
	now = now.Add(31 * time.Second)
	e.Once(context.Background(), []controller.Task{*task})
	if task.Status != controller.TaskFailed || !strings.Contains(task.Error, "did not complete within") {
		t.Fatalf("61 s without progress: status %s (%s), want failed", task.Status, task.Error)
	}

	// A snapshot sent again and again changes the count forever: past 30
	// phase timeouts from the learner's addition, bytes are no progress.
	task.Status, task.Error, task.UpdatedAtMs = controller.TaskRunning, "", now.UnixMilli()
	task.History = []controller.PhaseRecord{{Phase: controller.PhaseAddLearner, AtMs: now.Add(-29 * time.Minute).UnixMilli()}}
	for m := range 3 {
		now = now.Add(time.Minute)
		n.received += 1 << 30
		e.Once(context.Background(), []controller.Task{*task})
		if m == 0 && task.SnapshotBytes != n.received {
			t.Fatalf("29 phase timeouts in, the bytes were not progress: recorded %d of %d", task.SnapshotBytes, n.received)
		}
	}
	if task.Status != controller.TaskFailed {
		t.Fatalf("32 phase timeouts after the learner's addition, still %s (%s)", task.Status, task.Error)
	}
}

// stalledLearnerNode is a fake of the executor's node for a replica move's
// catch-up whose learner on node 4 has logged log of the leader's 24
// (leader on node 1); it counts the wakes of the leader.
type stalledLearnerNode struct {
	commitNode
	log   uint64
	wakes []slotstore.NodeID
}

func (n *stalledLearnerNode) Observe(context.Context) {}

func (n *stalledLearnerNode) Group(context.Context, slotstore.GroupID) (slotstore.GroupView, error) {
	return slotstore.GroupView{ID: 1, Leader: 1, Replicas: []slotstore.ReplicaView{
		{Node: 1, ReplicaID: 1, AppliedIndex: 19, LogLast: 24},
		{Node: 4, ReplicaID: 4, LogLast: n.log, Lag: 19 - min(n.log, 19)},
	}}, nil
}

func (n *stalledLearnerNode) WakeLeader(g slotstore.GroupID, leader slotstore.NodeID) {
	n.wakes = append(n.wakes, leader)
}

// TestAStalledLearnerWakesItsLeader: a learner behind its leader that logs
// nothing new for learnerStallWake has its group's leader woken (a lost
// first append is resent only after a heartbeat, which a quiesced group
// does not send) — once per stall, not every step; a learner whose log
// grows is not a stall.
func TestAStalledLearnerWakesItsLeader(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	task := &controller.Task{ID: 7, Kind: controller.TaskReplicaMove, Group: 1, From: 3, To: 4, OldReplicaID: 3, NewReplicaID: 4,
		Phase: controller.PhaseCatchUp, Status: controller.TaskRunning, Attempt: 1, UpdatedAtMs: now.UnixMilli()}
	n := &stalledLearnerNode{commitNode: commitNode{st: &controller.State{Tasks: map[uint64]*controller.Task{7: task}}}}
	e := New(Config{Node: n, PhaseTimeout: time.Minute, ActiveWithin: 5 * time.Second, MaxLag: 2, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	step := func() {
		e.Once(context.Background(), []controller.Task{*task})
		now = now.Add(time.Second)
	}
	for range 3 { // 0 s, 1 s, 2 s: not yet a stall
		step()
	}
	if len(n.wakes) != 0 {
		t.Fatalf("woken within %v: %v", learnerStallWake, n.wakes)
	}
	step() // 3 s
	if len(n.wakes) != 1 || n.wakes[0] != 1 {
		t.Fatalf("after %v of nothing logged: wakes %v, want node 1 once", learnerStallWake, n.wakes)
	}
	step()
	step()
	if len(n.wakes) != 1 {
		t.Fatalf("woken again within %v of the last wake: %v", learnerStallWake, n.wakes)
	}
	for range 5 { // from 6 s, when it would be woken again, the log grows every step
		n.log += 2
		step()
	}
	if len(n.wakes) != 1 {
		t.Fatalf("wakes %v while the log grew", n.wakes)
	}
	if task.Phase != controller.PhaseCatchUp || task.Status != controller.TaskRunning {
		t.Fatalf("the move: %s %s", task.Phase, task.Status)
	}
}
