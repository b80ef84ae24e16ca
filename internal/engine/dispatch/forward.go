package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// One forward hop: its deadline, and what a leader change while it waits
// makes of it.

// Causes that end a forward hop before the caller's deadline.
var (
	errHopDeadline = errors.New("the forward hop's deadline passed")
	errLeaderMoved = errors.New("the group's leader moved to another node")
)

// forwardPropose forwards an encoded command to target, the leader as this
// node knows it. The hop has its own deadline (ForwardHopTimeout, within
// ctx) and follows a leader change: as soon as this node learns that
// another node leads the group, a command still queued here (not sent) is
// refused with the new leader as the hint, which the caller follows; a
// command that carries an Idempotency-Key is cut off and re-sent the same
// way (the group answers its replay from the first result). A plain
// command already sent is answered "may or may not have been applied"
// (timeout, a short Retry-After) — at once when this node's replica has
// not heard from the old leader for half an election timeout (it was cut
// off or died: it will not answer), else after ForwardMoveGrace, since an
// old leader that handed its leadership over is alive and answers (a
// result, or not_leader), which is worth more than a guess.
func (d *Dispatcher) forwardPropose(ctx context.Context, target slotstore.NodeID, enc []byte, route slotstore.Route, idem bool) (meta.Result, slotstore.Route, error) {
	addr := d.PeerAddrOf(target)
	if addr == "" {
		return meta.Result{}, route, &slotstore.Error{Code: slotstore.CodeRouteNotReady, LeaderHint: target,
			Message: "the leader's peer address is unknown"}
	}
	hctx, cancel := context.WithTimeoutCause(ctx, d.cfg.ForwardHopTimeout, errHopDeadline)
	defer cancel()
	grace := func() time.Duration {
		if idem || d.silent(route.GroupID, target) {
			return 0
		}
		return d.cfg.ForwardMoveGrace
	}
	hctx, moved, stop := d.watchLeaderMove(hctx, route.GroupID, target, grace)
	defer stop()
	start := time.Now()
	res, r2, sent, err := d.cfg.Peers.Forward(hctx, addr, enc, moved)
	if d.cfg.Forwarded != nil {
		d.cfg.Forwarded(time.Since(start), err)
	}
	if r2.GroupID == 0 {
		r2 = route
	}
	if err == nil || ctx.Err() != nil {
		return res, r2, err // answered, or the caller's own deadline passed
	}
	movedAway := errors.Is(context.Cause(hctx), errLeaderMoved) || (!sent && isDone(moved))
	switch {
	case movedAway:
		st, _ := d.cfg.Router.Load().Group(route.GroupID)
		d.cfg.LeaderMove(!sent || idem)
		if !sent || idem {
			what := "before it was sent"
			if sent {
				what = "after it was sent; it carries an Idempotency-Key, so the new leader answers a replay"
			}
			return res, r2, &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: st.Leader, LeaderTerm: st.Term, Err: err,
				RetryAfter: 100 * time.Millisecond, Message: fmt.Sprintf("node %d leads group %d now (the write was forwarded to node %d; it moved %s)",
					st.Leader, route.GroupID, target, what)}
		}
		return res, r2, &slotstore.Error{Code: slotstore.CodeTimeout, Err: err, RetryAfter: 100 * time.Millisecond,
			Message: fmt.Sprintf("the leader of group %d changed (node %d → %d) and the old one did not answer; the write may or may not have been applied",
				route.GroupID, target, st.Leader)}
	case errors.Is(context.Cause(hctx), errHopDeadline):
		if !sent {
			return res, r2, &slotstore.Error{Code: slotstore.CodeRouteNotReady, Err: err, RetryAfter: 200 * time.Millisecond,
				Message: fmt.Sprintf("the leader (node %d) did not take the write within %v; not sent", target, d.cfg.ForwardHopTimeout)}
		}
		return res, r2, &slotstore.Error{Code: slotstore.CodeTimeout, Err: err, RetryAfter: 200 * time.Millisecond,
			Message: fmt.Sprintf("the leader (node %d) did not answer within %v; the write may or may not have been applied", target, d.cfg.ForwardHopTimeout)}
	}
	return res, r2, err
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// silent reports whether this node's replica of g has heard nothing from
// node's replica for half an election timeout (false when it cannot tell:
// no replica here, or never heard).
func (d *Dispatcher) silent(g slotstore.GroupID, node slotstore.NodeID) bool {
	ago, ok := d.cfg.Local.HeardAgo(g, node)
	return ok && ago > d.cfg.ElectionTimeout/2
}

// watchLeaderMove watches group g's leadership while a request waits on
// target. moved is closed once this node learns that a node other than
// target leads g (a change to "no leader" — an election under way — or to
// target at a newer term keeps it open); grace() later the returned child
// of ctx is cancelled with cause errLeaderMoved. stop releases both.
func (d *Dispatcher) watchLeaderMove(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID, grace func() time.Duration) (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	moved := make(chan struct{})
	var mu sync.Mutex
	stopped := false
	var unwatch func() bool
	var timer *time.Timer
	var arm func()
	arm = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		change := d.cfg.Router.LeaderChange(g)
		if st, _ := d.cfg.Router.Load().Group(g); st.Leader != 0 && st.Leader != target {
			close(moved)
			if d := grace(); d <= 0 {
				cancel(errLeaderMoved)
			} else {
				timer = time.AfterFunc(d, func() { cancel(errLeaderMoved) })
			}
			return
		}
		unwatch = context.AfterFunc(change, arm)
	}
	arm()
	return ctx, moved, func() {
		mu.Lock()
		stopped = true
		if unwatch != nil {
			unwatch()
		}
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(nil)
	}
}
