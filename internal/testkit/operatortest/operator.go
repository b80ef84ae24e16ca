package operatortest

import (
	"context"
	"slices"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The operations of slotstore.Operator, each recorded by name.

func (f *Fake) NodeID() slotstore.NodeID { f.Record("NodeID"); return f.Self }

// errNoControllerLeader is what the controller leader's answers fail with
// under NoControllerLeader.
var errNoControllerLeader = slotstore.Errorf(slotstore.CodeRouteNotReady, "no controller leader is known")

func (f *Fake) Summary() slotstore.ClusterSummary {
	f.Record("Summary")
	s := slotstore.ClusterSummary{ClusterID: "fake", NodeID: f.Self, RouteRevision: 3, ControllerLeader: f.Self, Ready: true,
		Local: append([]slotstore.LocalReplica{}, f.Local...)}
	if f.NoControllerLeader {
		s.ControllerLeader, s.Ready, s.NotReadyReason = 0, false, "no controller leader"
	}
	return s
}

func (f *Fake) Nodes() []slotstore.NodeInfo {
	defer f.lockFor("Nodes")()
	return slices.Clone(f.nodes)
}

func (f *Fake) SlotMap() [slotstore.HashSlotCount]slotstore.GroupID {
	defer f.lockFor("SlotMap")()
	return f.slots
}

func (f *Fake) NodeHealth(context.Context) ([]slotstore.NodeHealth, error) {
	defer f.lockFor("NodeHealth")()
	if f.NoControllerLeader {
		return nil, errNoControllerLeader
	}
	return slices.Clone(f.health), nil
}

func (f *Fake) Groups(context.Context) ([]slotstore.GroupView, error) {
	defer f.lockFor("Groups")()
	if f.NoControllerLeader {
		return nil, errNoControllerLeader
	}
	return sortedValues(f.groups, func(a, b slotstore.GroupView) int { return int(a.ID) - int(b.ID) }), nil
}

func (f *Fake) Group(_ context.Context, g slotstore.GroupID) (slotstore.GroupView, error) {
	defer f.lockFor("Group")()
	return existing(f.groups, g, "group")
}

// LeaderTransfer passes every check; carried out, it moves the leader and
// bumps the term.
func (f *Fake) LeaderTransfer(_ context.Context, g slotstore.GroupID, target slotstore.NodeID, dryRun bool) (slotstore.Preflight, slotstore.TransferResult, error) {
	defer f.lockFor("LeaderTransfer")()
	v, err := existing(f.groups, g, "group")
	if err != nil {
		return slotstore.Preflight{}, slotstore.TransferResult{}, err
	}
	pf := slotstore.Preflight{Group: g, Target: target, OK: true, Blockers: []slotstore.Blocker{}}
	if dryRun {
		return pf, slotstore.TransferResult{}, nil
	}
	f.transfers++
	prev := v.Leader
	v.Leader, v.Term = target, v.Term+1
	f.groups[g] = v
	return pf, slotstore.TransferResult{Group: g, PreviousLeader: prev, Leader: target, Term: v.Term}, nil
}

func (f *Fake) SetPreferredLeader(_ context.Context, g slotstore.GroupID, node slotstore.NodeID) error {
	defer f.lockFor("SetPreferredLeader")()
	v, err := existing(f.groups, g, "group")
	if err != nil {
		return err
	}
	v.PreferredLeader = node
	f.groups[g] = v
	return nil
}

func (f *Fake) Decisions() []slotstore.Decision {
	defer f.lockFor("Decisions")()
	return slices.Clone(f.decisions)
}

func (f *Fake) AuditTrail() []slotstore.AuditRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.audit)
}

// createTask starts a task as the controller would: running, at its first
// phase, numbered next.
func (f *Fake) createTask(call string, t slotstore.Task, movesSlots bool) (slotstore.Task, error) {
	f.Record(call)
	if movesSlots && f.SlotMovesOff {
		return slotstore.Task{}, controller.SlotMovesOff()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t.ID, t.Status, t.Attempt = f.nextTask, controller.TaskRunning, 1
	t.History = []slotstore.PhaseRecord{}
	t.CreatedAtMs = time.Now().UnixMilli()
	t.UpdatedAtMs = t.CreatedAtMs
	f.nextTask++
	f.tasks[t.ID] = t
	return t, nil
}

func (f *Fake) CreateReplicaMove(_ context.Context, g slotstore.GroupID, from, to slotstore.NodeID) (slotstore.Task, error) {
	return f.createTask("CreateReplicaMove", slotstore.Task{Kind: controller.TaskReplicaMove, Group: g, From: from, To: to,
		Phase: controller.PhaseAddLearner}, false)
}

func (f *Fake) CreateGroup(_ context.Context, _ []slotstore.NodeID) (slotstore.Task, error) {
	f.mu.Lock()
	g := slotstore.GroupID(len(f.groups) + 1)
	f.mu.Unlock()
	return f.createTask("CreateGroup", slotstore.Task{Kind: controller.TaskGroupCreate, Group: g, Phase: controller.PhaseStart}, false)
}

func (f *Fake) CreateSplit(_ context.Context, g slotstore.GroupID, slots []slotstore.HashSlot, _ []slotstore.NodeID) (slotstore.Task, error) {
	t, err := f.createTask("CreateSplit", slotstore.Task{Kind: controller.TaskGroupSplit, Group: g, ToGroup: 3, HashSlots: slots,
		Phase: controller.PhaseStart}, true)
	if err == nil {
		f.mu.Lock()
		f.splits = append(f.splits, slots)
		f.mu.Unlock()
	}
	return t, err
}

func (f *Fake) CreateMerge(_ context.Context, g, into slotstore.GroupID) (slotstore.Task, error) {
	return f.createTask("CreateMerge", slotstore.Task{Kind: controller.TaskGroupMerge, Group: g, ToGroup: into,
		Phase: controller.PhaseFence}, true)
}

func (f *Fake) CreateSlotMigration(_ context.Context, hs slotstore.HashSlot, to slotstore.GroupID) (slotstore.Task, error) {
	f.mu.Lock()
	from := f.slots[hs]
	f.mu.Unlock()
	return f.createTask("CreateSlotMigration", slotstore.Task{Kind: controller.TaskSlotMigration, Group: from, ToGroup: to, HashSlot: &hs,
		Phase: controller.PhaseFence}, true)
}

func (f *Fake) RetireGroup(_ context.Context, g slotstore.GroupID) error {
	defer f.lockFor("RetireGroup")()
	if _, err := existing(f.groups, g, "group"); err != nil {
		return err
	}
	delete(f.groups, g)
	return nil
}

func (f *Fake) Tasks() []slotstore.Task {
	defer f.lockFor("Tasks")()
	return sortedValues(f.tasks, func(a, b slotstore.Task) int { return int(b.ID) - int(a.ID) }) // newest first
}

func (f *Fake) Task(id uint64) (slotstore.Task, error) {
	defer f.lockFor("Task")()
	return existing(f.tasks, id, "task")
}

func (f *Fake) CancelTask(_ context.Context, id uint64) (slotstore.Task, error) {
	defer f.lockFor("CancelTask")()
	t, err := existing(f.tasks, id, "task")
	if err != nil {
		return t, err
	}
	t.Status = controller.TaskCancelling
	f.tasks[id] = t
	return t, nil
}

// DrainNode marks the node draining, half way (two replicas at the start,
// one left).
func (f *Fake) DrainNode(_ context.Context, id slotstore.NodeID) (slotstore.NodeInfo, error) {
	defer f.lockFor("DrainNode")()
	for i := range f.nodes {
		if f.nodes[i].ID == id {
			f.nodes[i].State, f.nodes[i].DrainReplicas = slotstore.NodeDraining, 2
			f.drains = append(f.drains, slotstore.DrainProgress{Node: id, ReplicasAtStart: 2, ReplicasLeft: 1, Percent: 50, EstimatedLeftMs: 4000})
			return f.nodes[i], nil
		}
	}
	return slotstore.NodeInfo{}, slotstore.Errorf(slotstore.CodeNotFound, "node %d is not registered", id)
}

func (f *Fake) RemoveNode(context.Context, slotstore.NodeID) error {
	f.Record("RemoveNode")
	return f.RemoveErr
}

func (f *Fake) Balancer(context.Context) (slotstore.BalancerStatus, error) {
	defer f.lockFor("Balancer")()
	if f.NoControllerLeader {
		return slotstore.BalancerStatus{}, errNoControllerLeader
	}
	return slotstore.BalancerStatus{Enabled: true, Paused: f.paused, IntervalMs: 5000, Aggregator: f.Self,
		Load: append([]slotstore.NodeLoad{}, f.Load...), Drains: append([]slotstore.DrainProgress{}, f.drains...),
		LastPlan: slotstore.BalancePlan{Actions: []slotstore.BalanceAction{}}, Pins: append([]slotstore.GroupPin{}, f.Pins...)}, nil
}

func (f *Fake) BalancerPlan(context.Context) (slotstore.BalancePlan, error) {
	f.Record("BalancerPlan")
	if f.NoControllerLeader {
		return slotstore.BalancePlan{}, errNoControllerLeader
	}
	return f.Plan, nil
}

func (f *Fake) SetBalancer(_ context.Context, c slotstore.BalancerChange) error {
	defer f.lockFor("SetBalancer")()
	if c.Paused != nil {
		f.paused = *c.Paused
	}
	f.Pins = slices.DeleteFunc(f.Pins, func(p slotstore.GroupPin) bool { return slices.Contains(c.ReleasePins, p.Group) })
	return nil
}

// lockFor records call and locks f; it returns the unlock, for the caller
// to defer.
func (f *Fake) lockFor(call string) (unlock func()) {
	f.Record(call)
	f.mu.Lock()
	return f.mu.Unlock
}

// existing returns m[id], or not_found: "<what> <id> does not exist".
func existing[K ~uint32 | ~uint64, V any](m map[K]V, id K, what string) (V, error) {
	v, ok := m[id]
	if !ok {
		return v, slotstore.Errorf(slotstore.CodeNotFound, "%s %d does not exist", what, id)
	}
	return v, nil
}

// sortedValues lists m's values in cmp's order.
func sortedValues[K comparable, V any](m map[K]V, cmp func(a, b V) int) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, cmp)
	return out
}
