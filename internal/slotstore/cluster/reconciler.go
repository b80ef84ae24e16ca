package cluster

import (
	"context"
	"fmt"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
)

// Decision kinds.
const (
	DecisionTransfer       = "transfer"
	DecisionSkip           = "skip"
	DecisionTransferred    = "transferred"
	DecisionTransferFailed = "transfer_failed"
)

// blockerOrder ranks blockers: the first present one is the reason recorded.
var blockerOrder = []string{ReasonNoObservation, ReasonNoLeader, ReasonTargetNotPeer, ReasonVoterMismatch,
	ReasonConfigChangePending, ReasonTargetNotVoter, ReasonTargetInactive, ReasonTargetUnreachable, ReasonTargetHeldDown,
	ReasonTargetLagging, ReasonTransferInFlight, ReasonTransferBackoff}

// decidePreferred is the preferred-leader policy for one group, a pure
// function of the view, the policy and the facts (the clock among them). It
// returns nil when there is nothing to decide (no preference, or the
// preferred node leads). It only ever proposes the preferred leader — never
// another candidate — and only when every check passes, reachability and
// hold-down included; otherwise it skips and says why.
func decidePreferred(v slotstore.GroupView, p LeadershipPolicy, f transferFacts) *slotstore.Decision {
	now := f.Now
	if v.PreferredLeader == 0 || (v.Leader == v.PreferredLeader && v.Leader != 0) {
		return nil
	}
	d := &slotstore.Decision{Group: v.ID, Leader: v.Leader, Term: v.Term, PreferredLeader: v.PreferredLeader, Observer: v.ObservedBy}
	if age := now.Sub(time.UnixMilli(v.PreferredSetAtMs)); age > p.PreferredTTL {
		d.Kind, d.Reason = DecisionSkip, ReasonStaleIntent
		d.Detail = fmt.Sprintf("preferred leader set %v ago (ttl %v)", age.Round(time.Second), p.PreferredTTL)
		return d
	}
	pf := checkTransfer(v, v.PreferredLeader, p, f)
	d.TargetLag, d.TargetReportAge = pf.TargetLag, pf.TargetReportAge
	if pf.OK {
		d.Kind, d.Reason = DecisionTransfer, "preferred_leader"
		d.Detail = fmt.Sprintf("move leadership from node %d to preferred node %d", v.Leader, v.PreferredLeader)
		return d
	}
	d.Kind = DecisionSkip
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

// ReconcileOnce runs one round of preferred-leader reconciliation at now,
// on the controller leader (elsewhere it does nothing). Each decision that
// differs from the group's previous one goes into the replicated decision
// log; a transfer is carried out before the round ends (bounded by the
// request timeout) and its outcome is logged too. It returns the decisions
// of the round.
func (n *Node) ReconcileOnce(now time.Time) []slotstore.Decision {
	if !n.isControllerLeader() {
		return nil
	}
	var out []slotstore.Decision
	views := n.aggregate(now)
	if n.viewsHook != nil {
		views = n.viewsHook(now)
	}
	for _, v := range views {
		d := decidePreferred(v, n.cfg.Leadership, n.transferFacts(v.ID, v.PreferredLeader, now))
		if d == nil {
			n.decided.Delete(v.ID)
			continue
		}
		out = append(out, *d)
		key := d.Kind + "/" + d.Reason
		if prev, ok := n.decided.Load(v.ID); !ok || prev.(string) != key || d.Kind == DecisionTransfer {
			n.record(*d)
			n.decided.Store(v.ID, key)
		}
		if d.Kind != DecisionTransfer {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
		res, err := n.executeTransfer(ctx, v, v.PreferredLeader)
		cancel()
		outcome := *d
		if err != nil {
			outcome.Kind, outcome.Reason, outcome.Detail = DecisionTransferFailed, string(slotstore.ErrorCode(err)), err.Error()
			if b := n.backoff.state(v.ID); b.failures > 0 {
				outcome.Detail += fmt.Sprintf("; failure %d in a row, next attempt not before %v", b.failures, b.until.Sub(now).Round(time.Millisecond))
			}
		} else {
			outcome.Kind, outcome.Reason = DecisionTransferred, "preferred_leader"
			outcome.Detail = fmt.Sprintf("node %d leads at term %d after %dms", res.Leader, res.Term, res.TookMs)
			outcome.Leader, outcome.Term = res.Leader, res.Term
		}
		n.record(outcome)
		out = append(out, outcome)
	}
	return out
}

// record appends a decision to the replicated log (best effort: a decision
// that cannot be recorded is logged locally and the round goes on).
func (n *Node) record(d slotstore.Decision) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
	defer cancel()
	if err := n.proposeController(ctx, controller.Command{Decision: &d}); err != nil {
		n.cfg.Logger.Warn("could not record a decision", "group", d.Group, "kind", d.Kind, "reason", d.Reason, "err", err)
	}
}
