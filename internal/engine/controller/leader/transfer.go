package leader

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// transferRequest is the peer endpoint "transfer"'s body: a raw transfer
// for the group's leader to carry out, or (?checked=1, or a dry run) a
// checked one for the controller leader to decide.
type transferRequest struct {
	Group  slotstore.GroupID `json:"group"`
	Target slotstore.NodeID  `json:"target"`
	DryRun bool              `json:"dry_run"`
}

// checkedAnswer is a checked transfer's answer over peer RPC.
type checkedAnswer struct {
	Preflight slotstore.Preflight      `json:"preflight"`
	Result    slotstore.TransferResult `json:"result"`
}

// inFlight reports whether this node started a transfer of g that has
// neither been seen to finish nor aged past the cooldown.
func (l *Leader) inFlight(g slotstore.GroupID, now time.Time) bool {
	v, ok := l.transfers.Load(g)
	return ok && now.Sub(v.(time.Time)) < l.cfg.Leadership.TransferCooldown
}

// facts gathers what the transfer checks of moving g's leadership to target
// need besides the group's view, as this node knows it at now.
func (l *Leader) facts(g slotstore.GroupID, target slotstore.NodeID, now time.Time) policy.Facts {
	f := policy.Facts{Now: now, InFlight: l.inFlight(g, now), Backoff: l.backoff.State(g)}
	f.TargetHealthyFor, f.TargetGap = l.obs.HealthyFor(now, target)
	f.TargetDiskLow = l.obs.DiskLow(target)
	for _, h := range l.obs.NodeHealth(now, []slotstore.NodeID{target}, l.cfg.NodeID) {
		f.TargetDown = h.Health == slotstore.NodeUnreachable
	}
	return f
}

// Transfer moves group g's leadership to target if every safety check
// passes (dryRun: only the checks). The controller leader decides — it holds
// the observations and knows which transfers are in flight — so other nodes
// pass the request to it; one that came from another node (forward false)
// is never passed on again, so two nodes that disagree about the
// controller leader cannot bounce it between them. A refusal is a conflict
// whose details are the blockers; a preflight is answered whole.
func (l *Leader) Transfer(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID, dryRun, forward bool) (slotstore.Preflight, slotstore.TransferResult, error) {
	if !l.Leads() {
		if !forward {
			return slotstore.Preflight{}, slotstore.TransferResult{}, l.notLeader()
		}
		body, _ := json.Marshal(transferRequest{Group: g, Target: target, DryRun: dryRun})
		out, err := askWith[checkedAnswer](ctx, l, http.MethodPost, "transfer?checked=1", body)
		return out.Preflight, out.Result, err
	}
	l.refresh(ctx)
	v, err := l.Group(ctx, g)
	if err != nil {
		return slotstore.Preflight{}, slotstore.TransferResult{}, err
	}
	f := l.facts(g, target, l.cfg.Now())
	pf := policy.CheckTransfer(v, target, l.cfg.Leadership, f)
	if dryRun {
		return pf, slotstore.TransferResult{}, nil
	}
	if !pf.OK {
		return pf, slotstore.TransferResult{}, l.refusal(g, pf, f)
	}
	res, err := l.execute(ctx, v, target)
	return pf, res, err
}

// refusal turns a failed preflight into an error whose details name the
// blockers: a 409 while the transfer is not safe, and a retryable busy
// with Retry-After when all that blocks it is time — another transfer of
// the group under way, or the back-off after failed ones — for then the
// same request succeeds later unchanged (it answered 409, not retryable,
// though it named when to retry).
func (l *Leader) refusal(g slotstore.GroupID, pf slotstore.Preflight, f policy.Facts) error {
	e := &slotstore.Error{Code: slotstore.CodeConflict, Message: "leader transfer refused: it is not safe now"}
	var wait time.Duration
	onlyTime := true
	for _, b := range pf.Blockers {
		e.Details = append(e.Details, slotstore.FieldError{Field: string(b.Reason), Reason: b.Detail})
		switch b.Reason {
		case policy.ReasonTransferInFlight:
			if started, ok := l.transfers.Load(g); ok {
				wait = max(wait, started.(time.Time).Add(l.cfg.Leadership.TransferCooldown).Sub(f.Now))
			}
		case policy.ReasonTransferBackoff:
			wait = max(wait, f.Backoff.Until.Sub(f.Now))
		default:
			onlyTime = false
		}
	}
	if !onlyTime {
		return e
	}
	e.Code, e.RetryAfter = slotstore.CodeBusy, max(wait, 100*time.Millisecond)
	e.Message = fmt.Sprintf("leader transfer of group %d refused for now: retry in %v", g, e.RetryAfter.Round(time.Millisecond))
	return e
}

// failedTransfer reports whether err, a transfer's outcome, is a failure
// the group's back-off counts: not a refusal before Raft was asked (the
// leader's node found the target silent, or no longer leads because
// leadership is moving already), which says nothing about the next try.
func failedTransfer(err error) bool {
	switch slotstore.ErrorCode(err) {
	case slotstore.CodeConflict, slotstore.CodeNotLeader, slotstore.CodeNotFound, slotstore.CodeRouteNotReady:
		return false
	}
	return true
}

// execute asks the group's current leader (this node, or the leader's node
// over peer RPC) to transfer, and waits to observe the new leader. The
// leader's node carries it out because it alone knows, live, whether the
// target answers it (it refuses otherwise), and so that it knows its
// leadership was handed away, not lost. A failure puts the group into
// back-off (a refusal does not: failedTransfer); a success clears it.
func (l *Leader) execute(ctx context.Context, v slotstore.GroupView, target slotstore.NodeID) (res slotstore.TransferResult, err error) {
	start := l.cfg.Now()
	l.transfers.Store(v.ID, start)
	defer l.transfers.Delete(v.ID)
	defer func() {
		switch {
		case err == nil:
			l.backoff.Succeeded(v.ID)
		case failedTransfer(err):
			l.backoff.Failed(v.ID, l.cfg.Now(), l.cfg.Leadership)
		}
	}()
	res = slotstore.TransferResult{Group: v.ID, PreviousLeader: v.Leader}
	if v.Leader == 0 {
		return res, slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no observed leader to transfer from", v.ID)
	}
	if v.Leader == l.cfg.NodeID {
		res.Leader, res.Term, err = l.cfg.Host.TransferHere(ctx, v.ID, target)
	} else {
		addr := l.cfg.Host.PeerAddr(v.Leader)
		if addr == "" {
			return res, slotstore.Errorf(slotstore.CodeRouteNotReady, "the group leader's peer address is unknown")
		}
		body, _ := json.Marshal(transferRequest{Group: v.ID, Target: target})
		var resp *http.Response
		if resp, _, err = l.cfg.Peers.Call(ctx, http.MethodPost, addr, "transfer", body, nil); err == nil {
			var b []byte
			if b, err = peer.ReadBody(resp); err == nil {
				err = json.Unmarshal(b, &res)
			}
		}
	}
	if err != nil {
		return res, err
	}
	res.ObservedAtMs = l.cfg.Now().UnixMilli()
	res.TookMs = l.cfg.Now().Sub(start).Milliseconds()
	res.PreviousLeader = v.Leader
	return res, nil
}
