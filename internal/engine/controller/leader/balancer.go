package leader

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/balance"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

// loadMaxAge: a node's load series older than this says nothing about now.
const loadMaxAge = 15 * time.Second

// balancerBook is what the controller leader remembers of its rounds.
type balancerBook struct {
	mu       sync.Mutex
	lastAt   time.Time
	lastPlan slotstore.BalancePlan
	held     string // the last Held recorded, so that a wait is logged once
}

// balanceInput builds the planner's view of the cluster at now.
func (l *Leader) balanceInput(now time.Time) balance.Input {
	st := l.cfg.Host.Controller()
	in := balance.Input{Now: now, ReplicationFactor: st.ReplicationFactor, InitialGroups: st.InitialGroupCount}
	in.InPlaceGated = clusterversion.Refusal(st.ClusterVersion, clusterversion.StateChecks)
	reachable := map[slotstore.NodeID]bool{}
	for _, h := range l.health(now) {
		reachable[h.Node] = h.Health == slotstore.NodeReachable
	}
	for _, id := range st.NodeIDs() {
		if node := st.Nodes[id]; node.State != controller.NodeRemoved || st.ReplicasOn(id) > 0 { // a lost node's replicas move off
			in.Nodes = append(in.Nodes, balance.Node{ID: id, State: node.State, Reachable: reachable[id], DiskLow: l.obs.DiskLow(id)})
		}
	}
	busy := map[slotstore.GroupID]bool{}
	for _, id := range st.TaskIDs() {
		t := st.Tasks[id]
		switch {
		case t.Status == controller.TaskRunning || t.Status == controller.TaskCancelling:
			busy[t.Group], busy[t.ToGroup] = true, true
			in.Running++
			if t.Kind == controller.TaskReplicaMove && t.Status == controller.TaskRunning {
				in.Moving = append(in.Moving, balance.ReplicaMove{Group: t.Group, From: t.From, To: t.To})
			}
			if controller.MovesSlots(t.Kind) {
				in.SlotTasks++
			}
			if t.Kind == controller.TaskGroupSplit || t.Kind == controller.TaskGroupMerge || t.Kind == controller.TaskGroupCreate {
				in.GroupTasks++
			}
		case t.Kind == controller.TaskSlotMigration && t.Status == controller.TaskSucceeded && t.HashSlot != nil:
			in.RecentMoves = append(in.RecentMoves, balance.SlotMove{Slot: *t.HashSlot, From: t.Group, To: t.ToGroup, At: time.UnixMilli(t.UpdatedAtMs)})
		}
	}
	table, _ := st.Table()
	for _, v := range l.views(now) {
		g := balance.Group{ID: v.ID, Leader: v.Leader, PreferredLeader: v.PreferredLeader, Busy: busy[v.ID],
			Quorum: v.LiveVoters > len(v.DesiredPeers)/2, // a quiesced group's voters are live too (Heard.Unanswered)
			Pinned: st.PinnedAt(v.ID, now.UnixMilli())}
		if v.PreferredSetAtMs > 0 {
			g.PreferredSetAt = time.UnixMilli(v.PreferredSetAtMs)
		}
		for _, p := range v.DesiredPeers {
			g.Peers = append(g.Peers, p.Node)
		}
		for _, r := range v.Replicas {
			if r.Failed != "" && r.Desired {
				g.Failed = append(g.Failed, r.Node)
			}
		}
		if table != nil {
			g.Slots = table.SlotsOf(v.ID)
		}
		in.Groups = append(in.Groups, g)
	}
	for i, r := range l.load.Slots(now, loadMaxAge) {
		in.SlotLoad[i] = balance.Load{Reads: r.Reads, Writes: r.Writes}
	}
	return in
}

// BalanceOnce runs one balancer round at now on the controller leader
// (elsewhere it does nothing; paused or turned off, it plans drains only):
// it plans, starts every action of the plan and records each in the
// decision log with its reason and numbers. It returns the plan.
func (l *Leader) BalanceOnce(ctx context.Context, now time.Time) slotstore.BalancePlan {
	if !l.Leads() {
		return slotstore.BalancePlan{}
	}
	in := l.balanceInput(now)
	in.DrainOnly = l.cfg.DisableBalancer || l.cfg.Host.Controller().Balancer.Paused
	plan := balance.Decide(in, l.cfg.Balancer)
	l.balancer.mu.Lock()
	l.balancer.lastAt, l.balancer.lastPlan = now, plan
	logHeld := plan.Held != "" && plan.Held != l.balancer.held
	l.balancer.held = plan.Held
	l.balancer.mu.Unlock()
	if logHeld {
		reason := cmp.Or(plan.HeldReason, "fault_open")
		l.record(slotstore.Decision{Kind: slotstore.DecisionBalanceHeld, Reason: reason, Detail: plan.Held, Observer: l.cfg.NodeID})
	}
	for _, a := range plan.Actions {
		d := slotstore.Decision{Group: a.Group, Kind: slotstore.DecisionBalance, Reason: a.Reason, Observer: l.cfg.NodeID,
			Detail: a.What() + ": " + a.Detail}
		if err := l.startAction(ctx, a); err != nil {
			d.Kind, d.Detail = slotstore.DecisionBalanceRefused, d.Detail+"; refused: "+err.Error()
		}
		l.record(d)
	}
	return plan
}

// startAction proposes the controller command that carries a out.
func (l *Leader) startAction(ctx context.Context, a slotstore.BalanceAction) error {
	var c controller.Command
	switch a.Kind {
	case balance.MoveReplica:
		c.CreateMove = &controller.CreateMove{Group: a.Group, From: a.From, To: a.To}
	case balance.SetLeader:
		c.SetPreferred = &controller.SetPreferred{Group: a.Group, Node: a.To}
	case balance.MoveSlot, balance.SplitGroup, balance.MergeGroup:
		if l.cfg.DisableHashSlotMoves {
			return controller.SlotMovesOff()
		}
		switch a.Kind {
		case balance.MoveSlot:
			c.SlotMigrate = &controller.CreateSlotMigration{HashSlot: a.HashSlot, ToGroup: a.ToGroup}
		case balance.SplitGroup:
			c.CreateSplit = &controller.CreateSplit{Group: a.Group}
		default:
			c.CreateMerge = &controller.CreateMerge{Group: a.Group, Into: a.ToGroup}
		}
	default:
		return fmt.Errorf("unknown balancer action %q", a.Kind)
	}
	cctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	defer cancel()
	_, err := l.cfg.Host.Propose(cctx, c)
	return err
}

// BalancerPlan is the plan the balancer would carry out now (a dry run,
// also while paused), from the controller leader.
func (l *Leader) BalancerPlan(ctx context.Context) (slotstore.BalancePlan, error) {
	if l.Leads() {
		return balance.Decide(l.balanceInput(l.cfg.Now()), l.cfg.Balancer), nil
	}
	return ask[slotstore.BalancePlan](ctx, l, "balancer-plan")
}

// Balancer reports the balancer's state, the load per node and the drains,
// from the controller leader.
func (l *Leader) Balancer(ctx context.Context) (slotstore.BalancerStatus, error) {
	if !l.Leads() {
		return ask[slotstore.BalancerStatus](ctx, l, "balancer")
	}
	now := l.cfg.Now()
	st := l.cfg.Host.Controller()
	out := slotstore.BalancerStatus{Enabled: !l.cfg.DisableBalancer, Paused: st.Balancer.Paused, PausedAtMs: st.Balancer.ChangedAtMs,
		IntervalMs: l.cfg.BalanceInterval.Milliseconds(), Aggregator: l.cfg.NodeID, Load: []slotstore.NodeLoad{}, Drains: []slotstore.DrainProgress{},
		LastPlan: slotstore.BalancePlan{Actions: []slotstore.BalanceAction{}}, Pins: []slotstore.GroupPin{}}
	for _, g := range slices.Sorted(maps.Keys(st.Pins)) {
		if p := st.Pins[g]; st.PinnedAt(g, now.UnixMilli()) {
			out.Pins = append(out.Pins, slotstore.GroupPin{Group: g, UntilMs: p.UntilMs, Why: p.Why, AtMs: p.AtMs})
		}
	}
	l.balancer.mu.Lock()
	if !l.balancer.lastAt.IsZero() {
		out.LastRoundAtMs, out.LastPlan = l.balancer.lastAt.UnixMilli(), l.balancer.lastPlan
	}
	l.balancer.mu.Unlock()
	views := l.views(now)
	leaders, observed := map[slotstore.NodeID]int{}, map[slotstore.NodeID]int{}
	for _, v := range views {
		leaders[v.Leader]++
		for _, id := range append(append([]slotstore.NodeID(nil), v.Voters...), v.Learners...) {
			observed[id]++
		}
	}
	for _, id := range st.NodeIDs() {
		node := st.Nodes[id]
		if node.State == controller.NodeRemoved {
			continue
		}
		r := l.load.Node(id, now, loadMaxAge)
		out.Load = append(out.Load, slotstore.NodeLoad{Node: id, Reads: r.Reads, Writes: r.Writes, Replicas: st.ReplicasOn(id), Leaders: leaders[id]})
		if node.State == controller.NodeDraining {
			out.Drains = append(out.Drains, drainProgress(node, st.ReplicasOn(id), leaders[id], observed[id], now))
		}
	}
	return out, nil
}

// drainProgress is how far node's drain got at now, with the time left at
// the pace so far. left counts the groups that still place a replica on the
// node, observed the groups whose observed membership still has it: the
// drain is done when both are 0 and it leads nothing.
func drainProgress(node *controller.Node, left, leading, observed int, now time.Time) slotstore.DrainProgress {
	p := slotstore.DrainProgress{Node: node.ID, StartedAtMs: node.DrainStartedAtMs, ReplicasAtStart: node.DrainReplicas,
		Percent: 100, EstimatedLeftMs: -1, Done: left == 0 && observed == 0 && leading == 0}
	left = max(left, observed) // a replica counts until the membership let it go too
	p.ReplicasLeft, p.LeadersLeft = left, leading
	if p.Done {
		p.EstimatedLeftMs = 0
		return p
	}
	if left == 0 { // moved, but the membership or the leadership has not followed yet
		p.Percent, p.EstimatedLeftMs = 99, 0
		return p
	}
	total := max(node.DrainReplicas, left)
	moved := total - left
	p.Percent = 100 * float64(moved) / float64(total)
	if moved > 0 {
		elapsed := now.Sub(time.UnixMilli(node.DrainStartedAtMs))
		p.EstimatedLeftMs = (elapsed / time.Duration(moved) * time.Duration(left)).Milliseconds()
	}
	return p
}
