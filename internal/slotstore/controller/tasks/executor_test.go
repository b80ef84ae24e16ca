package tasks

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
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
}

func (n *commitNode) Controller() *controller.State { return n.st }

func (n *commitNode) Membership(context.Context, MembershipRequest) (Membership, error) {
	if n.membership != nil {
		return Membership{}, n.membership
	}
	return Membership{Voters: map[uint64]string{1: "a", 2: "b", 4: "d"}}, nil
}

func (n *commitNode) Advance(_ context.Context, a controller.AdvanceTask) error {
	n.advances = append(n.advances, a)
	t := n.st.Tasks[a.ID]
	if a.Phase != "" {
		t.Phase = a.Phase
	}
	if a.Status != "" {
		t.Status, t.Error = a.Status, a.Error
	}
	return nil
}

func (n *commitNode) Record(slotstore.Decision) {}

// TestMoveAtCommitIsNeverFailed: a replica move whose commit cannot read
// the group's membership for longer than the phase timeout keeps trying —
// Raft already has the new voter and not the old one, so a failed task
// would leave the desired peers and the membership apart until someone
// asked for the same move again — and completes once it can; an earlier
// phase stuck as long fails its task as before.
func TestMoveAtCommitIsNeverFailed(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	task := &slotstore.Task{ID: 7, Kind: controller.TaskReplicaMove, Group: 1, From: 3, To: 4, OldReplicaID: 3, NewReplicaID: 4,
		Phase: controller.PhaseCommit, Status: controller.TaskRunning, UpdatedAtMs: now.Add(-time.Hour).UnixMilli()}
	n := &commitNode{st: &controller.State{Tasks: map[uint64]*slotstore.Task{7: task}},
		membership: errors.New("route_not_ready: group 1 has no live leader")}
	e := New(Config{Node: n, PhaseTimeout: time.Minute, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

	e.Once(context.Background(), []slotstore.Task{*task})
	if len(n.advances) != 0 || task.Status != controller.TaskRunning {
		t.Fatalf("a commit stuck for an hour: advances %+v, status %s", n.advances, task.Status)
	}
	n.membership = nil
	e.Once(context.Background(), []slotstore.Task{*task})
	if task.Phase != controller.PhaseDone || task.Status != controller.TaskRunning || len(n.advances) != 1 {
		t.Fatalf("after the membership answered: phase %s status %s, advances %+v", task.Phase, task.Status, n.advances)
	}

	// Before the point of no return, a phase stuck as long fails the task.
	task.Phase, task.Status, n.advances = controller.PhasePromote, controller.TaskRunning, nil
	n.membership = errors.New("route_not_ready: group 1 has no live leader")
	e.Once(context.Background(), []slotstore.Task{*task})
	if task.Status != controller.TaskFailed {
		t.Fatalf("a promotion stuck for an hour: status %s, advances %+v", task.Status, n.advances)
	}
}
