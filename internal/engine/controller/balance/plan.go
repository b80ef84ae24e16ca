package balance

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Decide is the balancer's plan for in under c (see the package doc).
func Decide(in Input, c Config) Plan {
	c = c.Defaults()
	in.Nodes = append([]Node(nil), in.Nodes...) // sorted below: the caller's slices stay as they are
	in.Groups = append([]Group(nil), in.Groups...)
	p := &planner{in: in, cfg: c, budget: c.MaxTasks - in.Running, slotBudget: c.MaxSlotTasks - in.SlotTasks,
		used: map[slotstore.GroupID]bool{}, nodes: map[slotstore.NodeID]Node{}, out: Plan{Actions: []Action{}}}
	sort.Slice(p.in.Nodes, func(i, j int) bool { return p.in.Nodes[i].ID < p.in.Nodes[j].ID })
	sort.Slice(p.in.Groups, func(i, j int) bool { return p.in.Groups[i].ID < p.in.Groups[j].ID })
	for _, n := range p.in.Nodes {
		p.nodes[n.ID] = n
	}
	for _, g := range p.in.Groups {
		if g.Busy {
			p.used[g.ID] = true
		}
	}
	p.countReplicas()
	p.drain()
	if in.DrainOnly {
		return p.out
	}
	// An operator's manual action pinned these: a drain (also the
	// operator's word) moves their replicas, nothing else touches them.
	for _, g := range p.in.Groups {
		if g.Pinned {
			p.used[g.ID] = true
		}
	}
	// Before the fault check: a failed replica leaves its group short of
	// live voters, which holds every other move until it is rebuilt.
	p.rebuild()
	if held := p.faultOpen(); held != "" {
		if p.out.Held == "" { // rebuild's own reason says more
			p.out.Held = held
		}
		return p.out
	}
	p.groupCount()
	p.replicaCount()
	p.leaders()
	p.hashSlots()
	return p.out
}

type planner struct {
	in                 Input
	cfg                Config
	budget, slotBudget int
	used               map[slotstore.GroupID]bool // busy, or given an action in this plan
	nodes              map[slotstore.NodeID]Node
	replicas           map[slotstore.NodeID]int // per active node, with the plan's moves
	out                Plan
}

func (p *planner) add(a Action) {
	p.out.Actions = append(p.out.Actions, a)
	switch a.Kind {
	case SetLeader:
	case MoveReplica:
		p.budget--
		p.replicas[a.From]--
		p.replicas[a.To]++
	default: // slot-moving tasks
		p.budget--
		p.slotBudget--
	}
	p.used[a.Group] = true
	if a.ToGroup != 0 {
		p.used[a.ToGroup] = true
	}
}

func (p *planner) free(g Group) bool { return !p.used[g.ID] && g.Quorum }

func (p *planner) active(id slotstore.NodeID) bool {
	n, ok := p.nodes[id]
	return ok && n.State == slotstore.NodeActive && n.Reachable && !n.DiskLow
}

// activeNodes lists the active nodes (reachable or not), by id.
func (p *planner) activeNodes() []slotstore.NodeID {
	var out []slotstore.NodeID
	for _, n := range p.in.Nodes {
		if n.State == slotstore.NodeActive {
			out = append(out, n.ID)
		}
	}
	return out
}

func (p *planner) countReplicas() {
	p.replicas = map[slotstore.NodeID]int{}
	for _, id := range p.activeNodes() {
		p.replicas[id] = 0
	}
	for _, g := range p.in.Groups {
		for _, n := range g.Peers {
			if _, ok := p.replicas[n]; ok {
				p.replicas[n]++
			}
		}
	}
	// A move under way counts as done: its source is on its way to one
	// replica fewer, its target to one more. Counted by the desired peers
	// alone, a round during a slow move saw the same skew again and sent
	// a second replica the same way, and the two then went back (the
	// simulator found replicas moving back and forth for as long as a
	// move took longer than a balancer round).
	for _, m := range p.in.Moving {
		if _, ok := p.replicas[m.From]; ok {
			p.replicas[m.From]--
		}
		if _, ok := p.replicas[m.To]; ok {
			p.replicas[m.To]++
		}
	}
}

// faultOpen says which fault holds balancing back ("" when none).
func (p *planner) faultOpen() string {
	for _, n := range p.in.Nodes {
		if n.State == slotstore.NodeActive && !n.Reachable {
			return fmt.Sprintf("node %d is unreachable", n.ID)
		}
	}
	for _, g := range p.in.Groups {
		if !g.Quorum && !g.Busy { // a group a task creates has no voters yet
			return fmt.Sprintf("group %d has no quorum of live voters", g.ID)
		}
		if len(g.Failed) > 0 {
			return fmt.Sprintf("group %d's replica on node %d failed to start", g.ID, g.Failed[0])
		}
	}
	return ""
}

// emptiest is the reachable active node outside peers with the fewest
// replicas (the lowest id among equals); 0 when there is none.
func (p *planner) emptiest(peers []slotstore.NodeID) slotstore.NodeID {
	var best slotstore.NodeID
	for _, id := range p.activeNodes() {
		if !p.active(id) || slices.Contains(peers, id) {
			continue
		}
		if best == 0 || p.replicas[id] < p.replicas[best] {
			best = id
		}
	}
	return best
}

func (p *planner) drain() {
	for _, n := range p.in.Nodes {
		// A removed node that still holds replicas was lost for good (a
		// controller recovery removed it): its replicas move off as a
		// draining node's do.
		if n.State != slotstore.NodeDraining && n.State != slotstore.NodeRemoved {
			continue
		}
		left := 0
		for _, g := range p.in.Groups {
			if slices.Contains(g.Peers, n.ID) {
				left++
			}
		}
		why := "drains"
		if n.State == slotstore.NodeRemoved {
			why = "was removed"
		}
		for _, g := range p.in.Groups {
			if !p.moveOff(g, n.ID, ReasonDrain, fmt.Sprintf("no active node can take group %d's replica from draining node %d", g.ID, n.ID),
				func(to slotstore.NodeID) string {
					return fmt.Sprintf("node %d %s (%d replicas left on it); node %d has %d replicas, the fewest", n.ID, why, left, to, p.replicas[to])
				}) {
				return
			}
		}
	}
}

// rebuild moves every replica its node could not start or a state check
// fenced (Group.Failed) as a drain does: the new replica is sent a
// snapshot, and the failed one's data is removed from its node once it is
// no longer placed there. With no active node outside the group (three
// nodes, three replicas) it is rebuilt in place: a move from its node to
// itself removes it first, then adds the new one there.
func (p *planner) rebuild() {
	for _, g := range p.in.Groups {
		for _, from := range g.Failed {
			if p.budget <= 0 {
				return
			}
			if !slices.Contains(g.Peers, from) || !p.free(g) {
				continue
			}
			if to := p.emptiest(g.Peers); to != 0 {
				p.add(Action{Kind: MoveReplica, Reason: ReasonRebuild, Group: g.ID, From: from, To: to,
					Detail: fmt.Sprintf("node %d could not start its replica, or a state check fenced it (see the group's view); rebuilt on node %d, %d replicas, the fewest", from, to, p.replicas[to])})
				continue
			}
			if !p.active(from) {
				p.out.Held = fmt.Sprintf("no active node can take group %d's failed replica on node %d", g.ID, from)
				return
			}
			if p.in.InPlaceGated != "" {
				p.out.Held = fmt.Sprintf("no node outside group %d can take its failed replica on node %d, and it cannot be rebuilt in place: %s", g.ID, from, p.in.InPlaceGated)
				return
			}
			p.add(Action{Kind: MoveReplica, Reason: ReasonRebuild, Group: g.ID, From: from, To: from,
				Detail: fmt.Sprintf("node %d could not start its replica, or a state check fenced it (see the group's view); no active node outside the group: rebuilt in place from a snapshot", from)})
		}
	}
}

// moveOff plans moving g's replica on node from to the active node with the
// fewest replicas outside g's peers, for reason (detail says why, given the
// target). It reports false when planning must stop: the budget is spent,
// or no node can take it (held, then, says so). A group that is busy or
// without a quorum, or not on from, is passed over.
func (p *planner) moveOff(g Group, from slotstore.NodeID, reason slotstore.Reason, held string, detail func(to slotstore.NodeID) string) bool {
	if p.budget <= 0 {
		return false
	}
	if !slices.Contains(g.Peers, from) || !p.free(g) {
		return true
	}
	to := p.emptiest(g.Peers)
	if to == 0 {
		p.out.Held = held
		return false
	}
	p.add(Action{Kind: MoveReplica, Reason: reason, Group: g.ID, From: from, To: to, Detail: detail(to)})
	return true
}

// load is a group's measured load: the sum of its slots'.
func (p *planner) load(g Group) float64 {
	var sum float64
	for _, s := range g.Slots {
		sum += p.in.SlotLoad[s].Total()
	}
	return sum
}

// wantedGroups is the group count the active nodes call for.
func (p *planner) wantedGroups() int {
	n := len(p.activeNodes())
	want := p.in.InitialGroups
	if n > p.in.ReplicationFactor && n*p.cfg.GroupsPerNode > want {
		want = n * p.cfg.GroupsPerNode
	}
	return max(p.in.InitialGroups, min(want, p.cfg.MaxGroups))
}

// byLoad orders groups busiest first: load, then slots, then lower id.
func (p *planner) byLoad(gs []Group) []Group {
	out := append([]Group(nil), gs...)
	sort.SliceStable(out, func(i, j int) bool {
		li, lj := p.load(out[i]), p.load(out[j])
		if li != lj {
			return li > lj
		}
		if len(out[i].Slots) != len(out[j].Slots) {
			return len(out[i].Slots) > len(out[j].Slots)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (p *planner) groupCount() {
	if p.cfg.GroupsPerNode < 0 || p.in.GroupTasks > 0 || p.budget <= 0 || p.slotBudget <= 0 {
		return
	}
	want, have := p.wantedGroups(), len(p.in.Groups)
	nodes := len(p.activeNodes())
	switch {
	case have < want:
		for _, g := range p.byLoad(p.in.Groups) {
			if p.free(g) && len(g.Slots) >= 2 {
				p.add(Action{Kind: SplitGroup, Reason: ReasonGrow, Group: g.ID,
					Detail: fmt.Sprintf("%d active nodes want %d groups, there are %d; group %d is the busiest (%.0f ops/s, %d slots)", nodes, want, have, g.ID, p.load(g), len(g.Slots))})
				return
			}
		}
	case have > want:
		order := p.byLoad(p.in.Groups)
		var quiet []Group
		for i := len(order) - 1; i >= 0; i-- {
			if p.free(order[i]) {
				quiet = append(quiet, order[i])
			}
		}
		if len(quiet) >= 2 {
			from, into := quiet[0], quiet[1]
			p.add(Action{Kind: MergeGroup, Reason: ReasonShrink, Group: from.ID, ToGroup: into.ID,
				Detail: fmt.Sprintf("%d active nodes want %d groups, there are %d; groups %d (%.0f ops/s, %d slots) and %d (%.0f ops/s) are the least busy", nodes, want, have, from.ID, p.load(from), len(from.Slots), into.ID, p.load(into))})
		}
	default:
		p.out.Balanced = append(p.out.Balanced, "group_count")
	}
}

func (p *planner) replicaCount() {
	for p.budget > 0 {
		nodes := p.activeNodes()
		if len(nodes) < 2 {
			return
		}
		fullest, emptiest := nodes[0], nodes[0]
		for _, id := range nodes { // ties: the lowest id
			if p.replicas[id] > p.replicas[fullest] {
				fullest = id
			}
			if p.replicas[id] < p.replicas[emptiest] {
				emptiest = id
			}
		}
		if p.replicas[fullest]-p.replicas[emptiest] <= p.cfg.ReplicaSkew {
			p.out.Balanced = append(p.out.Balanced, "replica_count")
			return
		}
		moved := false
		for _, g := range p.groupsOf(fullest) {
			if !p.free(g) || slices.Contains(g.Peers, emptiest) || !p.active(emptiest) {
				continue
			}
			p.add(Action{Kind: MoveReplica, Reason: ReasonCount, Group: g.ID, From: fullest, To: emptiest,
				Detail: fmt.Sprintf("node %d holds %d replicas, node %d %d (skew allowed %d)", fullest, p.replicas[fullest], emptiest, p.replicas[emptiest], p.cfg.ReplicaSkew)})
			moved = true
			break
		}
		if !moved {
			return
		}
	}
}

// groupsOf lists the groups with a peer on node, those it does not lead
// first (moving a follower is cheaper than moving a leader).
func (p *planner) groupsOf(node slotstore.NodeID) []Group {
	var out []Group
	for _, g := range p.in.Groups {
		if slices.Contains(g.Peers, node) {
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Leader != node && out[j].Leader == node })
	return out
}

// effectiveLeader is where a group's leadership is or is being moved to.
func (p *planner) effectiveLeader(g Group) slotstore.NodeID {
	if g.PreferredLeader != 0 && slices.Contains(g.Peers, g.PreferredLeader) && !g.PreferredSetAt.IsZero() &&
		p.in.Now.Sub(g.PreferredSetAt) < p.cfg.LeaderSettle {
		return g.PreferredLeader
	}
	return g.Leader
}

func (p *planner) leaders() {
	count := map[slotstore.NodeID]int{}
	for _, id := range p.activeNodes() {
		count[id] = 0
	}
	lead := map[slotstore.GroupID]slotstore.NodeID{}
	for _, g := range p.in.Groups {
		l := p.effectiveLeader(g)
		lead[g.ID] = l
		if _, ok := count[l]; ok {
			count[l]++
		}
	}
	changed := false
	for round := 0; round < p.cfg.MaxTasks; round++ {
		nodes := p.activeNodes()
		sort.SliceStable(nodes, func(i, j int) bool { return count[nodes[i]] > count[nodes[j]] })
		if len(nodes) < 2 || count[nodes[0]]-count[nodes[len(nodes)-1]] <= p.cfg.LeaderSkew {
			break
		}
		done := false
		for _, busiest := range nodes {
			for _, g := range p.in.Groups {
				if lead[g.ID] != busiest || !p.free(g) {
					continue
				}
				var to slotstore.NodeID
				for _, peer := range g.Peers {
					if p.active(peer) && peer != busiest && count[busiest]-count[peer] > p.cfg.LeaderSkew && (to == 0 || count[peer] < count[to]) {
						to = peer
					}
				}
				if to == 0 {
					continue
				}
				p.add(Action{Kind: SetLeader, Reason: ReasonLeader, Group: g.ID, From: busiest, To: to,
					Detail: fmt.Sprintf("node %d leads %d groups, node %d %d (skew allowed %d)", busiest, count[busiest], to, count[to], p.cfg.LeaderSkew)})
				count[busiest]--
				count[to]++
				lead[g.ID] = to
				done, changed = true, true
				break
			}
			if done {
				break
			}
		}
		if !done {
			break
		}
	}
	if !changed {
		p.out.Balanced = append(p.out.Balanced, "leader_count")
	}
}

// hotSlots names the slots of group g that alone carry more than a group
// may (bound: mean × LoadSkew) and returns their load: wherever such a slot
// goes, its group is the busiest, so no move brings the skew within bounds.
func (p *planner) hotSlots(g Group, mean, bound float64) float64 {
	var sum float64
	for _, s := range g.Slots {
		if l := p.in.SlotLoad[s].Total(); l > bound {
			p.out.Hot = append(p.out.Hot, slotstore.HotSlot{Slot: s, Group: g.ID, OpsPerSec: l, OfMean: l / mean})
			sum += l
		}
	}
	return sum
}

// movedLately reports whether slot s moved within the cooldown.
func (p *planner) movedLately(s slotstore.HashSlot) bool {
	for _, m := range p.in.RecentMoves {
		if m.Slot == s && p.in.Now.Sub(m.At) < p.cfg.SlotCooldown {
			return true
		}
	}
	return false
}

func (p *planner) hashSlots() {
	if p.budget <= 0 || p.slotBudget <= 0 || len(p.in.Groups) < 2 {
		return
	}
	order := p.byLoad(p.in.Groups)
	var total float64
	for _, g := range order {
		total += p.load(g)
	}
	mean := total / float64(len(order))
	if busiest := p.load(order[0]); busiest >= p.cfg.MinLoad {
		bound := mean * p.cfg.LoadSkew // what a group may carry; a slot over it alone is hot
		if busiest <= bound {
			p.out.Balanced = append(p.out.Balanced, "slot_load")
			return
		}
		// The least busy group led elsewhere: moving load between groups
		// led by one node changes no node's load.
		hot, cold := order[0], Group{}
		for i := len(order) - 1; i > 0; i-- {
			if p.effectiveLeader(order[i]) != p.effectiveLeader(hot) {
				cold = order[i]
				break
			}
		}
		if cold.ID == 0 {
			p.out.Balanced = append(p.out.Balanced, "slot_load")
			return
		}
		if hotLoad := p.hotSlots(hot, mean, bound); hotLoad > 0 {
			// A hot slot stays where it is (moving it moves the heat), and
			// while the rest of its group is within bounds no move of the
			// rest brings the group within them either: say so, and wait.
			if rest := busiest - hotLoad; rest <= bound {
				h := p.out.Hot[0]
				p.out.Held, p.out.HeldReason = fmt.Sprintf("hash slot %d of group %d alone carries %.0f ops/s, %.1f× the mean group load (%.0f): a hot key or hot slot that no move spreads; the rest of the group (%.0f ops/s) is within bounds, so moving it would not help",
					h.Slot, hot.ID, h.OpsPerSec, h.OfMean, mean, rest), ReasonHotSlot
				return
			}
		}
		if !p.free(hot) || !p.free(cold) || len(hot.Slots) < 2 {
			return
		}
		gap := p.load(hot) - p.load(cold)
		best, bestLeft := slotstore.HashSlot(0), math.Inf(1)
		found := false
		for _, s := range hot.Slots {
			l := p.in.SlotLoad[s].Total()
			// A hot slot stays: moving it moves the heat.
			if l <= 0 || l >= gap || l > bound || p.movedLately(s) {
				continue
			}
			// Worth a move only if it lowers the busier of the two by half
			// the load it moves at least: a slot about the gap's size only
			// swaps which group is the busier (the simulator found groups
			// of one and two slots under an even load trading slots for an
			// hour, each move "closer" by the noise of the measured rates).
			if busiest-max(busiest-l, p.load(cold)+l) < l/2 {
				continue
			}
			if left := math.Abs(gap - 2*l); left < bestLeft {
				best, bestLeft, found = s, left, true
			}
		}
		if !found {
			p.out.Held = fmt.Sprintf("group %d carries %.0f ops/s (mean %.0f) but no slot of it narrows the gap to group %d (its hottest slots move as a whole)", hot.ID, busiest, mean, cold.ID)
			return
		}
		p.add(Action{Kind: MoveSlot, Reason: ReasonLoad, Group: hot.ID, ToGroup: cold.ID, HashSlot: best,
			Detail: fmt.Sprintf("group %d carries %.0f ops/s, group %d %.0f, mean %.0f (skew allowed %.2f×); slot %d carries %.0f", hot.ID, busiest, cold.ID, p.load(cold), mean, p.cfg.LoadSkew, best, p.in.SlotLoad[best].Total())})
		return
	}
	if p.load(order[0]) >= p.cfg.MinLoad/2 {
		// Between the two modes (load that comes and goes around MinLoad):
		// neither, or they would undo each other.
		return
	}
	// Nothing measured worth balancing: even out the slot counts.
	sort.SliceStable(order, func(i, j int) bool {
		if len(order[i].Slots) != len(order[j].Slots) {
			return len(order[i].Slots) > len(order[j].Slots)
		}
		return order[i].ID < order[j].ID
	})
	most, fewest := order[0], order[len(order)-1]
	if len(most.Slots)-len(fewest.Slots) <= p.cfg.SlotSkew {
		p.out.Balanced = append(p.out.Balanced, "slot_count")
		return
	}
	if !p.free(most) || !p.free(fewest) {
		return
	}
	cands := append([]slotstore.HashSlot(nil), most.Slots...)
	sort.SliceStable(cands, func(i, j int) bool { // the coldest first, the highest number among equals
		li, lj := p.in.SlotLoad[cands[i]].Total(), p.in.SlotLoad[cands[j]].Total()
		if li != lj {
			return li < lj
		}
		return cands[i] > cands[j]
	})
	for _, s := range cands {
		if p.movedLately(s) {
			continue
		}
		p.add(Action{Kind: MoveSlot, Reason: ReasonSlots, Group: most.ID, ToGroup: fewest.ID, HashSlot: s,
			Detail: fmt.Sprintf("group %d owns %d slots, group %d %d (skew allowed %d; no load above %.0f ops/s measured)", most.ID, len(most.Slots), fewest.ID, len(fewest.Slots), p.cfg.SlotSkew, p.cfg.MinLoad)})
		return
	}
}
