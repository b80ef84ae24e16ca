package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// blockerOrder ranks blockers: the first present one is the reason recorded.
var blockerOrder = []slotstore.Reason{ReasonNoObservation, ReasonNoLeader, ReasonTargetNotPeer, ReasonVoterMismatch,
	ReasonConfigChangePending, ReasonTargetNotVoter, ReasonTargetInactive, ReasonTargetUnreachable, ReasonTargetDiskLow,
	ReasonTargetHeldDown, ReasonTargetLagging, ReasonTransferInFlight, ReasonTransferBackoff}

// DecidePreferred is the preferred-leader policy for one group, a pure
// function of the view, the policy and the facts (the clock among them). It
// returns nil when there is nothing to decide (no preference, or the
// preferred node leads). It only ever proposes the preferred leader — never
// another candidate — and only when every check passes, reachability and
// hold-down included; otherwise it skips and says why.
func DecidePreferred(v slotstore.GroupView, p Leadership, f Facts) *slotstore.Decision {
	now := f.Now
	if v.PreferredLeader == 0 || (v.Leader == v.PreferredLeader && v.Leader != 0) {
		return nil
	}
	d := &slotstore.Decision{Group: v.ID, Leader: v.Leader, Term: v.Term, PreferredLeader: v.PreferredLeader, Observer: v.ObservedBy}
	if age := now.Sub(time.UnixMilli(v.PreferredSetAtMs)); age > p.PreferredTTL {
		d.Kind, d.Reason = slotstore.DecisionSkip, ReasonStaleIntent
		d.Detail = fmt.Sprintf("preferred leader set %v ago (ttl %v)", age.Round(time.Second), p.PreferredTTL)
		return d
	}
	pf := CheckTransfer(v, v.PreferredLeader, p, f)
	d.TargetLag, d.TargetReportAge = pf.TargetLag, pf.TargetReportAge
	if pf.OK {
		d.Kind, d.Reason = slotstore.DecisionTransfer, "preferred_leader"
		d.Detail = fmt.Sprintf("move leadership from node %d to preferred node %d", v.Leader, v.PreferredLeader)
		return d
	}
	d.Kind = slotstore.DecisionSkip
	d.Reason, d.Detail = firstBlocker(pf)
	return d
}

// firstBlocker is the blocker a skip records: the first of blockerOrder
// that pf lists.
func firstBlocker(pf Preflight) (slotstore.Reason, string) {
	for _, reason := range blockerOrder {
		for _, b := range pf.Blockers {
			if b.Reason == reason {
				return b.Reason, b.Detail
			}
		}
	}
	return pf.Blockers[0].Reason, pf.Blockers[0].Detail
}

// DecideDiskLow moves a group's leadership off a node whose disk is low
// (facts(v.Leader).TargetDiskLow): that node refuses the group's writes,
// so another voter should lead — the preferred leader if every check
// passes for it, else the first other voter, in node order, for which
// they do; it returns the decision and that target. It returns nil when
// the leader's disk is not low, and a skip naming the preferred (or first)
// candidate's first blocker when no voter can take the lead. A pure
// function, like DecidePreferred; the preferred-leader reconciler does not
// move the leadership back while the node stays low (CheckTransfer blocks
// a low target). The target is named in the decision's detail only: a
// field of its own would be a new form of a replicated record
// (clusterversion).
func DecideDiskLow(v slotstore.GroupView, p Leadership, facts func(slotstore.NodeID) Facts) (*slotstore.Decision, slotstore.NodeID) {
	if v.Leader == 0 || !facts(v.Leader).TargetDiskLow {
		return nil, 0
	}
	d := &slotstore.Decision{Group: v.ID, Leader: v.Leader, Term: v.Term, PreferredLeader: v.PreferredLeader, Observer: v.ObservedBy}
	candidates := slices.Sorted(slices.Values(v.Voters))
	if v.PreferredLeader != 0 && v.PreferredLeader != v.Leader {
		candidates = append([]slotstore.NodeID{v.PreferredLeader}, slices.DeleteFunc(candidates, func(n slotstore.NodeID) bool { return n == v.PreferredLeader })...)
	}
	var first *Preflight
	for _, c := range candidates {
		if c == v.Leader {
			continue
		}
		pf := CheckTransfer(v, c, p, facts(c))
		if pf.OK {
			d.Kind, d.Reason = slotstore.DecisionTransfer, ReasonLeaderDiskLow
			d.TargetLag, d.TargetReportAge = pf.TargetLag, pf.TargetReportAge
			d.Detail = fmt.Sprintf("node %d's disk is low: move leadership to node %d", v.Leader, c)
			return d, c
		}
		if first == nil {
			first = &pf
		}
	}
	d.Kind, d.Reason = slotstore.DecisionSkip, ReasonLeaderDiskLow
	d.Detail = fmt.Sprintf("node %d's disk is low, and no other voter can lead", v.Leader)
	if first != nil {
		why, detail := firstBlocker(*first)
		d.Detail += fmt.Sprintf(": node %d: %s (%s)", first.Target, why, detail)
	}
	return d, 0
}
