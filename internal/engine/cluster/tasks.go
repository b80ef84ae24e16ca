package cluster

import (
	"context"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The controller's tasks as the operator sees them: create, list, cancel.
// The controller leader steps them (package leader, with package tasks'
// executor).

// CreateReplicaMove starts (or resumes) moving g's replica from one node to another.
func (o operator) CreateReplicaMove(ctx context.Context, g slotstore.GroupID, from, to slotstore.NodeID) (slotstore.Task, error) {
	return o.createTask(ctx, controller.Command{CreateMove: &controller.CreateMove{Group: g, From: from, To: to}}, false)
}

// Task returns one task as this node last applied the controller state.
func (o operator) Task(id uint64) (slotstore.Task, error) {
	if t, ok := o.ctrl.Load().Tasks[id]; ok {
		return t.API(), nil
	}
	return slotstore.Task{}, slotstore.Errorf(slotstore.CodeNotFound, "task %d does not exist", id)
}

// Tasks lists every kept task, newest first.
func (o operator) Tasks() []slotstore.Task { return o.ctrl.Load().TasksAPI() }

// CancelTask asks to cancel a task before its commit.
func (o operator) CancelTask(ctx context.Context, id uint64) (slotstore.Task, error) {
	if _, err := o.ctl.proposeControllerResult(ctx, controller.Command{CancelTask: &controller.CancelTask{ID: id}}); err != nil {
		return slotstore.Task{}, err
	}
	return o.Task(id)
}

// CreateSplit starts moving hash slots of g (none: the upper half of its
// slots) into a new group on peers (none: the controller chooses).
func (o operator) CreateSplit(ctx context.Context, g slotstore.GroupID, slots []slotstore.HashSlot, peers []slotstore.NodeID) (slotstore.Task, error) {
	return o.createTask(ctx, controller.Command{CreateSplit: &controller.CreateSplit{Group: g, HashSlots: slots, Peers: peers}}, true)
}

// CreateMerge starts moving every hash slot of g into group into, and
// retiring g.
func (o operator) CreateMerge(ctx context.Context, g, into slotstore.GroupID) (slotstore.Task, error) {
	return o.createTask(ctx, controller.Command{CreateMerge: &controller.CreateMerge{Group: g, Into: into}}, true)
}

// CreateSlotMigration starts (or resumes a failed) migration of hash slot hs
// to group to. Refused (permission_denied) unless the node was started with
// hash-slot migration enabled.
func (o operator) CreateSlotMigration(ctx context.Context, hs slotstore.HashSlot, to slotstore.GroupID) (slotstore.Task, error) {
	return o.createTask(ctx, controller.Command{SlotMigrate: &controller.CreateSlotMigration{HashSlot: hs, ToGroup: to}}, true)
}

// CreateGroup starts a new, empty slot group on peers (none: the
// controller chooses the least loaded active nodes); the task says when it
// runs.
func (o operator) CreateGroup(ctx context.Context, peers []slotstore.NodeID) (slotstore.Task, error) {
	return o.createTask(ctx, controller.Command{CreateGroup: &controller.CreateGroup{Peers: peers}}, false)
}

// RetireGroup removes an empty group: every node stops its replica and
// deletes its data.
func (o operator) RetireGroup(ctx context.Context, g slotstore.GroupID) error {
	_, err := o.ctl.proposeControllerResult(ctx, controller.Command{RetireGroup: &controller.RetireGroup{Group: g}})
	return err
}

// createTask proposes a task command and returns the task. SyncPropose
// returns once this node's replica applied the command, so the task is
// already in the state Task reads. A task that moves hash slots is refused
// unless the node enables them.
func (o operator) createTask(ctx context.Context, c controller.Command, movesSlots bool) (slotstore.Task, error) {
	if movesSlots && o.noSlotMoves {
		return slotstore.Task{}, controller.SlotMovesOff()
	}
	r, err := o.ctl.proposeControllerResult(ctx, o.pinned(c))
	if err != nil {
		return slotstore.Task{}, err
	}
	return o.Task(r.TaskID)
}
