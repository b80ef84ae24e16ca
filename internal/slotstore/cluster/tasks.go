package cluster

import (
	"context"
	"sort"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
)

// The controller's tasks as the node offers them: create, list, cancel; the
// controller leader steps them (TasksOnce) with package tasks' executor.

// CreateReplicaMove starts (or resumes) moving g's replica from one node to another.
func (n *Node) CreateReplicaMove(ctx context.Context, g slotstore.GroupID, from, to slotstore.NodeID) (slotstore.Task, error) {
	id, err := n.proposeControllerTask(ctx, controller.Command{CreateMove: &controller.CreateMove{Group: g, From: from, To: to}})
	if err != nil {
		return slotstore.Task{}, err
	}
	return n.Task(id)
}

// Task returns one task as this node last applied the controller state.
func (n *Node) Task(id uint64) (slotstore.Task, error) {
	if t, ok := n.ctrl.Load().Tasks[id]; ok {
		return *t, nil
	}
	return slotstore.Task{}, slotstore.Errorf(slotstore.CodeNotFound, "task %d does not exist", id)
}

// Tasks lists every kept task, newest first.
func (n *Node) Tasks() []slotstore.Task {
	st := n.ctrl.Load()
	out := make([]slotstore.Task, 0, len(st.Tasks))
	for _, t := range st.Tasks {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out
}

// CancelTask asks to cancel a task before its commit.
func (n *Node) CancelTask(ctx context.Context, id uint64) (slotstore.Task, error) {
	if _, err := n.proposeControllerTask(ctx, controller.Command{CancelTask: &controller.CancelTask{ID: id}}); err != nil {
		return slotstore.Task{}, err
	}
	return n.Task(id)
}

// TasksOnce runs one step of every running task (controller leader only).
func (n *Node) TasksOnce(ctx context.Context) {
	if !n.isControllerLeader() {
		return
	}
	n.tasks.Once(ctx, n.Tasks())
}

// proposeControllerTask proposes a task command and returns the task id.
// SyncPropose returns once this node's replica applied the command, so the
// task is already in the state Task reads.
func (n *Node) proposeControllerTask(ctx context.Context, c controller.Command) (uint64, error) {
	r, err := n.proposeControllerResult(ctx, c)
	return r.TaskID, err
}

// slotMoves refuses tasks that move hash slots unless the node enables them.
func (n *Node) slotMoves() error {
	if n.cfg.DisableHashSlotMoves {
		return slotstore.Errorf(slotstore.CodePermissionDenied,
			"hash-slot moves are turned off on this node (--enable-hash-slot-migration=false)")
	}
	return nil
}

// CreateSplit starts moving hash slots of g (none: the upper half of its
// slots) into a new group on peers (none: the controller chooses).
func (n *Node) CreateSplit(ctx context.Context, g slotstore.GroupID, slots []slotstore.HashSlot, peers []slotstore.NodeID) (slotstore.Task, error) {
	if err := n.slotMoves(); err != nil {
		return slotstore.Task{}, err
	}
	id, err := n.proposeControllerTask(ctx, controller.Command{CreateSplit: &controller.CreateSplit{Group: g, HashSlots: slots, Peers: peers}})
	if err != nil {
		return slotstore.Task{}, err
	}
	return n.Task(id)
}

// CreateMerge starts moving every hash slot of g into group into, and
// retiring g.
func (n *Node) CreateMerge(ctx context.Context, g, into slotstore.GroupID) (slotstore.Task, error) {
	if err := n.slotMoves(); err != nil {
		return slotstore.Task{}, err
	}
	id, err := n.proposeControllerTask(ctx, controller.Command{CreateMerge: &controller.CreateMerge{Group: g, Into: into}})
	if err != nil {
		return slotstore.Task{}, err
	}
	return n.Task(id)
}

// CreateSlotMigration starts (or resumes a failed) migration of hash slot hs
// to group to. Refused (permission_denied) unless the node was started with
// hash-slot migration enabled.
func (n *Node) CreateSlotMigration(ctx context.Context, hs slotstore.HashSlot, to slotstore.GroupID) (slotstore.Task, error) {
	if err := n.slotMoves(); err != nil {
		return slotstore.Task{}, err
	}
	id, err := n.proposeControllerTask(ctx, controller.Command{SlotMigrate: &controller.CreateSlotMigration{HashSlot: hs, ToGroup: to}})
	if err != nil {
		return slotstore.Task{}, err
	}
	return n.Task(id)
}

// CreateGroup starts a new, empty slot group on peers (none: the
// controller chooses the least loaded active nodes); the task says when it
// runs.
func (n *Node) CreateGroup(ctx context.Context, peers []slotstore.NodeID) (slotstore.Task, error) {
	id, err := n.proposeControllerTask(ctx, controller.Command{CreateGroup: &controller.CreateGroup{Peers: peers}})
	if err != nil {
		return slotstore.Task{}, err
	}
	return n.Task(id)
}

// RetireGroup removes an empty group: every node stops its replica and
// deletes its data.
func (n *Node) RetireGroup(ctx context.Context, g slotstore.GroupID) error {
	return taskHost{n}.RetireGroup(ctx, g)
}
