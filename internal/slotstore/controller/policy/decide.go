package policy

import (
	"fmt"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// blockerOrder ranks blockers: the first present one is the reason recorded.
var blockerOrder = []slotstore.Reason{ReasonNoObservation, ReasonNoLeader, ReasonTargetNotPeer, ReasonVoterMismatch,
	ReasonConfigChangePending, ReasonTargetNotVoter, ReasonTargetInactive, ReasonTargetUnreachable, ReasonTargetHeldDown,
	ReasonTargetLagging, ReasonTransferInFlight, ReasonTransferBackoff}

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
	for _, reason := range blockerOrder {
		for _, b := range pf.Blockers {
			if b.Reason == reason && d.Reason == "" {
				d.Reason, d.Detail = b.Reason, b.Detail
			}
		}
	}
	if d.Reason == "" {
		d.Reason, d.Detail = pf.Blockers[0].Reason, pf.Blockers[0].Detail
	}
	return d
}
