package leader

import (
	"context"
	"fmt"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// ReconcileOnce runs one round of leader reconciliation at now, on the
// controller leader (elsewhere it does nothing): a group led from a node
// whose disk is low is moved to another voter (policy.DecideDiskLow), else
// toward its preferred leader (policy.DecidePreferred). Each decision that
// differs from the group's previous one goes into the replicated decision
// log; a transfer is carried out before the round ends (bounded by the
// request timeout) and its outcome is logged too. It returns the decisions
// of the round.
func (l *Leader) ReconcileOnce(now time.Time) []slotstore.Decision {
	if !l.Leads() {
		return nil
	}
	var out []slotstore.Decision
	for _, v := range l.decisionViews(now) {
		factsOf := func(n slotstore.NodeID) policy.Facts { return l.facts(v.ID, n, now) }
		d, target := policy.DecideDiskLow(v, l.cfg.Leadership, factsOf)
		if d == nil {
			d, target = policy.DecidePreferred(v, l.cfg.Leadership, factsOf(v.PreferredLeader)), v.PreferredLeader
		}
		if d == nil {
			l.decided.Delete(v.ID)
			continue
		}
		out = append(out, *d)
		key := string(d.Kind) + "/" + string(d.Reason)
		if prev, ok := l.decided.Load(v.ID); !ok || prev.(string) != key || d.Kind == slotstore.DecisionTransfer {
			l.record(*d)
			l.decided.Store(v.ID, key)
		}
		if d.Kind != slotstore.DecisionTransfer {
			continue
		}
		ctx, cancel := context.WithTimeout(l.cfg.Life, l.cfg.RequestTimeout)
		res, err := l.execute(ctx, v, target)
		cancel()
		outcome := *d
		if err != nil {
			outcome.Kind, outcome.Reason, outcome.Detail = slotstore.DecisionTransferFailed, slotstore.Reason(slotstore.ErrorCode(err)), err.Error()
			if b := l.backoff.State(v.ID); b.Failures > 0 {
				outcome.Detail += fmt.Sprintf("; failure %d in a row, next attempt not before %v", b.Failures, b.Until.Sub(now).Round(time.Millisecond))
			}
		} else {
			outcome.Kind = slotstore.DecisionTransferred
			outcome.Detail = fmt.Sprintf("node %d leads at term %d after %dms", res.Leader, res.Term, res.TookMs)
			outcome.Leader, outcome.Term = res.Leader, res.Term
		}
		l.record(outcome)
		out = append(out, outcome)
	}
	return out
}
