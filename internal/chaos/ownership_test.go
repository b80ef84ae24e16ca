package chaos

import (
	"fmt"
	"slices"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// Hash-slot ownership, read from every node's replicas (the owned set is
// replicated FSM state; cluster.Node.Ownership reads it):
//   - all replicas of a group report the same owned set, with no slot fenced;
//   - every one of the 256 hash slots is owned by exactly one group;
//   - every node whose controller replica is up to date routes every slot to
//     a group that owns it.
//
// These hold whenever no hash-slot move (migration, split, merge) is in flight (none of the
// fault kinds starts one). While one is, replicas legitimately disagree for
// a moment and a slot is held by two groups during the handover, so the
// check is skipped and counted as such.
//
// Only the replicas on a group's desired peers (in the freshest controller
// state any node applied) are compared: a replica move's new learner starts
// empty and owns nothing until it has caught up (it becomes a desired peer
// only after that, at the move's commit), and the old replica is stopped
// and its rows deleted once it is no longer desired.

type ownershipReport struct {
	checks, skipped int
	violations      []string
}

// checkOwnership runs the check once on the cluster's current nodes.
func (r *ownershipReport) check(nodes []*cluster.Node) {
	if migrationInFlight(nodes) {
		r.skipped++
		return
	}
	r.checks++
	// The invariants are of a settled cluster: a group whose replicas have
	// not all applied the last step of a move, or a node whose table has not
	// caught up, is given a moment (bounded) before what remains is reported.
	var bad []string
	testutil.Eventually(2*time.Second, 50*time.Millisecond, func() (bool, string) {
		bad = ownershipViolations(nodes)
		return len(bad) == 0, ""
	})
	r.violations = append(r.violations, bad...)
}

func migrationInFlight(nodes []*cluster.Node) bool {
	for _, n := range nodes {
		for _, t := range n.Operator().Tasks() {
			if controller.MovesSlots(t.Kind) && (t.Status == controller.TaskRunning || t.Status == controller.TaskCancelling) {
				return true
			}
		}
	}
	return false
}

func ownershipViolations(nodes []*cluster.Node) []string {
	var bad []string
	groupSet := map[slotstore.GroupID][]slotstore.HashSlot{} // the first replica's view of each group
	groupFrom := map[slotstore.GroupID]slotstore.NodeID{}
	var ctrl *controller.State
	for _, n := range nodes {
		if st := n.Controller(); ctrl == nil || st.AppliedIndex > ctrl.AppliedIndex {
			ctrl = st
		}
	}
	// Replicas are compared at the same applied index only: a replica
	// behind its group's most advanced one (a follower still applying, one
	// cut off until the last heal) shows an older state, which it leaves by
	// applying. Two replicas at the same index that disagree have diverged.
	type view struct {
		node    slotstore.NodeID
		applied uint64
		owned   []slotstore.HashSlot
		fenced  []slotstore.HashSlot
	}
	latest := map[slotstore.GroupID][]view{}
	for _, n := range nodes {
		for _, ro := range n.Ownership() {
			if grp, ok := ctrl.Groups[ro.Group]; !ok || grp.Peers[n.NodeID()] == 0 {
				continue
			}
			v := view{n.NodeID(), ro.AppliedIndex, ro.Owned, ro.Fenced}
			switch cur := latest[ro.Group]; {
			case len(cur) == 0 || v.applied > cur[0].applied:
				latest[ro.Group] = []view{v}
			case v.applied == cur[0].applied:
				latest[ro.Group] = append(cur, v)
			}
		}
	}
	for g, vs := range latest {
		first := vs[0]
		groupSet[g], groupFrom[g] = first.owned, first.node
		for _, v := range vs {
			if len(v.fenced) > 0 {
				bad = append(bad, fmt.Sprintf("n%d: group %d has fenced slots %v with no migration in flight", v.node, g, v.fenced))
			}
			if !slices.Equal(first.owned, v.owned) {
				bad = append(bad, fmt.Sprintf("group %d: n%d's replica owns %d slots at applied index %d, n%d's %d at the same index",
					g, v.node, len(v.owned), v.applied, first.node, len(first.owned)))
			}
		}
	}
	var owners [slotstore.HashSlotCount][]slotstore.GroupID
	for g, slots := range groupSet {
		for _, hs := range slots {
			owners[hs] = append(owners[hs], g)
		}
	}
	for hs, gs := range owners {
		if len(gs) != 1 {
			slices.Sort(gs)
			bad = append(bad, fmt.Sprintf("hash slot %d owned by groups %v", hs, gs))
		}
	}
	for _, n := range nodes {
		// A node whose controller replica is behind the freshest one (cut
		// off until the last heal) routes by the older table it applied —
		// legitimately: the replicas refuse what they no longer own, and it
		// catches up by applying. Only up-to-date nodes are held to it.
		if n.Controller().AppliedIndex < ctrl.AppliedIndex {
			continue
		}
		tbl := n.Routes().Table()
		if tbl == nil {
			bad = append(bad, fmt.Sprintf("n%d has no routing table", n.NodeID()))
			continue
		}
		for hs := range slotstore.HashSlotCount {
			g := tbl.Group(slotstore.HashSlot(hs))
			if !slices.Contains(owners[hs], g) {
				bad = append(bad, fmt.Sprintf("n%d routes hash slot %d to group %d; owners %v (its table at route revision %d, its controller state at %d)",
					n.NodeID(), hs, g, owners[hs], tbl.Revision(), n.Controller().RouteRevision))
			}
		}
	}
	return bad
}
