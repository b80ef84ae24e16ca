package cluster

import (
	"context"
	"fmt"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/controller/policy"
)

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
	views := n.views(now)
	if n.viewsHook != nil {
		views = n.viewsHook(now)
	}
	for _, v := range views {
		d := policy.DecidePreferred(v, n.cfg.Leadership, n.transferFacts(v.ID, v.PreferredLeader, now))
		if d == nil {
			n.decided.Delete(v.ID)
			continue
		}
		out = append(out, *d)
		key := string(d.Kind) + "/" + d.Reason
		if prev, ok := n.decided.Load(v.ID); !ok || prev.(string) != key || d.Kind == slotstore.DecisionTransfer {
			n.record(*d)
			n.decided.Store(v.ID, key)
		}
		if d.Kind != slotstore.DecisionTransfer {
			continue
		}
		ctx, cancel := context.WithTimeout(n.life, n.cfg.RequestTimeout)
		res, err := n.executeTransfer(ctx, v, v.PreferredLeader)
		cancel()
		outcome := *d
		if err != nil {
			outcome.Kind, outcome.Reason, outcome.Detail = slotstore.DecisionTransferFailed, string(slotstore.ErrorCode(err)), err.Error()
			if b := n.backoff.State(v.ID); b.Failures > 0 {
				outcome.Detail += fmt.Sprintf("; failure %d in a row, next attempt not before %v", b.Failures, b.Until.Sub(now).Round(time.Millisecond))
			}
		} else {
			outcome.Kind, outcome.Reason = slotstore.DecisionTransferred, "preferred_leader"
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
	ctx, cancel := context.WithTimeout(n.life, n.cfg.RequestTimeout)
	defer cancel()
	if err := n.proposeController(ctx, controller.Command{Decision: &d}); err != nil {
		n.cfg.Logger.Warn("could not record a decision", "group", d.Group, "kind", d.Kind, "reason", d.Reason, "err", err)
	}
}
