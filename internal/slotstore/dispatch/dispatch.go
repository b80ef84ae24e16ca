// Package dispatch routes each command and query of a node to the replica
// that serves it: the local proposer when this node leads the group, else
// the leader over peer RPC; the local replica for a read when there is one,
// else a peer that holds one.
//
// Model. A route comes from the node's routing snapshot. A forward follows
// a newer leader hint at most MaxForwardHops times, and only refusals that
// prove the command was not proposed — or, under an Idempotency-Key, also a
// forward cut short by a leader change, since the group answers a replay
// from its first result — so nothing is applied twice by forwarding. A hop
// has its own deadline and follows a leader change at once; a write that
// finds no reachable leader waits for the next leader change, at most
// LeaderWait (ADR 0007).
//
// Concurrency contract. A Dispatcher holds no state of its own beyond its
// configuration: every method may be called from any goroutine, and each is
// bounded by the context given (and by the hop deadline within it).
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/heat"
	"slotmeta/internal/slotstore/meta"
	"slotmeta/internal/slotstore/peer"
	"slotmeta/internal/slotstore/propose"
	"slotmeta/internal/slotstore/raftnet"
	"slotmeta/internal/slotstore/replicas"
	"slotmeta/internal/slotstore/routing"
)

// Config is what a dispatcher needs of its node.
type Config struct {
	NodeID     slotstore.NodeID
	Router     *routing.Router
	Replicas   *replicas.Set
	Peers      *peer.Client
	NH         *dragonboat.NodeHost // local reads (StaleRead, the leader view)
	Heard      *raftnet.Heard
	Controller func() *controller.State
	// Forwarding bounds (package cluster's Config has their meaning).
	MaxForwardHops                                  int
	ForwardHopTimeout, ForwardMoveGrace, LeaderWait time.Duration
	ElectionTimeout                                 time.Duration
	Now                                             func() time.Time
	// Metrics hooks: every proposal's outcome; forwards cut short by a
	// leader change.
	Proposal   func(g slotstore.GroupID, code slotstore.Code)
	LeaderMove func(redirected bool)
	// Heat counts the reads and writes this node resolved, per hash slot
	// (nil: not counted).
	Heat *heat.Counters
	// Wake, when set, is told of a group whose leader (0: none known) could
	// not be reached (no leader known, a forward that failed or timed out):
	// a quiesced group must be woken to elect a new one — and so must the
	// other groups that node leads (package cluster, quiesce.go). It must
	// not block.
	Wake func(g slotstore.GroupID, leader slotstore.NodeID)
}

// Dispatcher routes a node's commands and queries.
type Dispatcher struct{ cfg Config }

// New returns a dispatcher.
func New(cfg Config) *Dispatcher { return &Dispatcher{cfg: cfg} }

// Propose replicates cmd through the group owning its route key's hash slot.
// If this node is that group's leader the command goes to the local
// proposer; otherwise it is forwarded to the leader over peer RPC (one hop:
// the leader serves it or refuses with a hint). A not_leader answer with a
// newer hint is followed, at most MaxForwardHops times; then the caller gets
// not_leader with the newest hint. Only refusals that prove the command was
// not proposed are followed — or, for a command carrying an Idempotency-Key,
// whose replay the group answers from its first result, also a forward cut
// short by a leader change — so nothing is applied twice by forwarding.
//
// While the group has no leader known here (an election), or the leader
// cannot be reached and the command was not sent, the write waits for the
// next leader change — at most LeaderWait in all, within ctx — and goes to
// the new leader, instead of failing at once: a client sees an election as
// latency, not as an error, when it ends in time. A command with an
// Idempotency-Key does the same after an unknown outcome (a connection lost
// with the old leader, say).
func (d *Dispatcher) Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error) {
	hs := slotstore.HashSlotOfString(cmd.RouteKey())
	h := cmd.Head()
	h.HashSlot = hs
	if heat.Counted(ctx) {
		d.cfg.Heat.Write(hs)
	}
	change, route, err := d.resolveWatching(hs)
	if route.GroupID == 0 {
		d.cfg.Proposal(route.GroupID, slotstore.ErrorCode(err))
		return meta.Result{}, route, err
	}
	// What every replica will decode must decode here first: a field over a
	// codec limit is the caller's mistake, not a poisoned log entry.
	enc := meta.EncodeCommand(cmd)
	if _, derr := meta.DecodeCommand(enc); derr != nil {
		err := slotstore.Wrap(slotstore.CodeInvalidArgument, derr, "command exceeds a codec limit")
		d.cfg.Proposal(route.GroupID, err.Code)
		return meta.Result{}, route, err
	}
	idem := h.IdempotencyKey != ""
	waitUntil := time.Now().Add(d.cfg.LeaderWait)
	target := route.LeaderNodeID
	var res meta.Result
	for hop, rounds := 0, 0; rounds < maxProposeRounds; rounds++ {
		if target == 0 {
			if err == nil {
				err = slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", route.GroupID)
			}
		} else if target == d.cfg.NodeID {
			res, route, err = d.ProposeLocal(ctx, cmd)
		} else {
			res, route, err = d.forwardPropose(ctx, target, enc, route, idem)
		}
		if next, ok := d.followHint(route.GroupID, target, err); ok && hop < d.cfg.MaxForwardHops {
			target = next
			hop++
			continue
		}
		// Wait for a new leader, and go to it, when the write was not
		// proposed for want of a reachable leader — or, carrying an
		// Idempotency-Key, when its outcome is unknown (its replay is
		// answered from the first result, so sending it again is safe).
		if unreached(err) && ctx.Err() == nil { // not the caller's own deadline
			d.wake(route.GroupID, target)
		}
		again := definitelyLeaderless(err) || idem && slotstore.ErrorCode(err) == slotstore.CodeTimeout
		if !again || !awaitLeaderChange(ctx, change, waitUntil) {
			break
		}
		change, route, err = d.resolveWatching(hs)
		target = route.LeaderNodeID
	}
	code := slotstore.ErrorCode(err)
	if err == nil {
		code = res.Code
	}
	d.cfg.Proposal(route.GroupID, code)
	return res, route, err
}

// maxProposeRounds bounds the attempts of one Propose (hint follows and
// waits for a leader together); time bounds them first.
const maxProposeRounds = 16

// resolveWatching resolves hs and returns, taken before the resolve, the
// context its group's next leader change cancels.
func (d *Dispatcher) resolveWatching(hs slotstore.HashSlot) (context.Context, slotstore.Route, error) {
	route, _ := d.cfg.Router.Load().ResolveSlot(hs)
	change := d.cfg.Router.LeaderChange(route.GroupID)
	route, err := d.cfg.Router.Load().ResolveSlot(hs)
	return change, route, err
}

// unreached: err says the group's leader could not be reached (none known,
// or it did not answer).
func unreached(err error) bool {
	c := slotstore.ErrorCode(err)
	return err != nil && (c == slotstore.CodeRouteNotReady || c == slotstore.CodeTimeout)
}

func (d *Dispatcher) wake(g slotstore.GroupID, leader slotstore.NodeID) {
	if d.cfg.Wake != nil && g != 0 {
		d.cfg.Wake(g, leader)
	}
}

// definitelyLeaderless reports an error that says the write was not
// proposed because no reachable leader took it: no leader known, the
// leader's node unreachable before anything was sent, a replica not
// running, dropped by Raft until the deadline.
func definitelyLeaderless(err error) bool {
	c := slotstore.ErrorCode(err)
	return err != nil && (c == slotstore.CodeRouteNotReady || c == slotstore.CodeNotLeader)
}

// awaitLeaderChange waits for change (a leader change of the group) until
// ctx ends or until passes; it reports whether the change came in time.
func awaitLeaderChange(ctx, change context.Context, until time.Time) bool {
	d := time.Until(until)
	if d <= 0 || ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-change.Done():
		return ctx.Err() == nil
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// followHint decides whether a refusal from target points somewhere new. It
// records the hint in the router (the refusing node saw a newer leader).
func (d *Dispatcher) followHint(g slotstore.GroupID, target slotstore.NodeID, err error) (slotstore.NodeID, bool) {
	var se *slotstore.Error
	if err == nil || !errors.As(err, &se) || se.Code != slotstore.CodeNotLeader {
		return 0, false
	}
	if se.LeaderHint == 0 || se.LeaderHint == target {
		return 0, false
	}
	if se.LeaderTerm > 0 && g != 0 {
		d.cfg.Router.SetLeader(g, se.LeaderHint, se.LeaderTerm)
	}
	return se.LeaderHint, true
}

// ProposeLocal serves a command on this node: only if the router says this
// node leads the group; otherwise not_leader with the leader it knows. The
// group is the one owning the command's hash slot, unless group is given
// (hash-slot migration commands address a group explicitly).
func (d *Dispatcher) ProposeLocal(ctx context.Context, cmd meta.Command, group ...slotstore.GroupID) (meta.Result, slotstore.Route, error) {
	hs := cmd.Head().HashSlot
	snap := d.cfg.Router.Load()
	route, err := snap.ResolveSlot(hs)
	if len(group) > 0 && group[0] != 0 {
		st, _ := snap.Group(group[0])
		route = slotstore.Route{HashSlot: hs, GroupID: group[0], LeaderNodeID: st.Leader, LeaderTerm: st.Term,
			ConfigEpoch: st.ConfigEpoch, RouteRevision: snap.Revision()}
		err = nil
		if st.Leader == 0 {
			err = slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", group[0])
		}
	}
	if err != nil {
		return meta.Result{}, route, err
	}
	lg := d.cfg.Replicas.All()[route.GroupID]
	if route.LeaderNodeID != d.cfg.NodeID || lg == nil {
		return meta.Result{}, route, &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: route.LeaderNodeID,
			LeaderTerm: route.LeaderTerm, RetryAfter: 200 * time.Millisecond, Message: "this node does not lead the group"}
	}
	cmd.Head().TimeMs = d.cfg.Now().UnixMilli()
	res, err := lg.Proposer.Submit(ctx, meta.EncodeCommand(cmd))
	if err == nil && (res.Code == slotstore.CodeWrongGroup || res.Code == slotstore.CodeSlotMigrating) {
		// The slot moved, or is moving, under us: the client retries (and
		// re-resolves once the new table arrives).
		err = &slotstore.Error{Code: res.Code, Message: res.Message, RouteRevision: route.RouteRevision, RetryAfter: 200 * time.Millisecond}
	}
	return res, route, err
}

// ProposeToGroup replicates a command through group g itself (its leader,
// here or one peer hop away), whatever the routing table says of its slot.
func (d *Dispatcher) ProposeToGroup(ctx context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error) {
	st, _ := d.cfg.Router.Load().Group(g)
	if st.Leader == 0 {
		return meta.Result{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", g)
	}
	if st.Leader == d.cfg.NodeID {
		res, _, err := d.ProposeLocal(ctx, cmd, g)
		return res, err
	}
	addr := d.PeerAddrOf(st.Leader)
	if addr == "" {
		return meta.Result{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "the peer address of node %d is unknown", st.Leader)
	}
	res, _, _, err := d.cfg.Peers.Propose(ctx, addr, meta.EncodeCommand(cmd), g)
	return res, err
}

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
	res, r2, sent, err := d.cfg.Peers.Forward(hctx, addr, enc, moved)
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
	grp, ok := d.cfg.Controller().Groups[g]
	if !ok || d.cfg.Replicas.All()[g] == nil {
		return false
	}
	ago, ok := d.cfg.Heard.Ago(controller.ShardOf(g), grp.Peers[node])
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

// PeerAddrOf returns the peer RPC address of node id from the controller state.
func (d *Dispatcher) PeerAddrOf(id slotstore.NodeID) string {
	if node, ok := d.cfg.Controller().Nodes[id]; ok {
		return node.PeerAddr
	}
	return ""
}

// Read answers q from the group owning its hash slot: through the local
// replica when there is one (ReadIndex on a follower is linearizable too),
// otherwise through a peer that holds one — the leader first, then the
// group's other desired peers. While no replica it asks knows a leader (an
// election: say a quiesced group woken by this very read, whose follower
// campaigned), it waits for the group's next leader change and asks again
// — at most LeaderWait in all, within ctx — as a write does: a read is safe
// to ask again, and an election is latency, not an error, when it ends in
// time.
func (d *Dispatcher) Read(ctx context.Context, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error) {
	if heat.Counted(ctx) {
		d.cfg.Heat.Read(q.RouteSlot())
	}
	waitUntil := time.Now().Add(d.cfg.LeaderWait)
	for round := 1; ; round++ {
		change, route, rerr := d.resolveWatching(q.RouteSlot())
		v, info, err := d.readOnce(ctx, q, c, route, rerr)
		if err == nil || c == meta.Local || route.GroupID == 0 || slotstore.ErrorCode(err) != slotstore.CodeRouteNotReady ||
			round == maxReadRounds || !awaitLeaderChange(ctx, change, waitUntil) {
			return v, info, err
		}
	}
}

// maxReadRounds bounds the attempts of one Read; LeaderWait bounds them first.
const maxReadRounds = 4

// readOnce is one attempt of Read on route (rerr: the resolve's error).
func (d *Dispatcher) readOnce(ctx context.Context, q meta.Query, c meta.Consistency, route slotstore.Route, rerr error) (any, meta.ReadInfo, error) {
	if route.GroupID == 0 {
		return nil, meta.ReadInfo{ServedBy: d.cfg.NodeID, Route: route}, rerr
	}
	local := false
	if lg := d.cfg.Replicas.All()[route.GroupID]; lg != nil && lg.SM() != nil {
		if c == meta.Local {
			return d.ReadLocal(ctx, q, c)
		}
		// A ReadIndex on this replica normally takes one round trip; if it
		// has not completed in half the budget (a restarting replica, a
		// leader change swallowing it), ask the leader instead with the rest.
		lctx, cancel := context.WithTimeout(ctx, localReadBudget(ctx))
		v, info, err := d.ReadLocal(lctx, q, c)
		cancel()
		if err == nil || !slotstore.ErrorCode(err).Retryable() || ctx.Err() != nil {
			return v, info, err
		}
		local, rerr = true, err
	}
	var candidates []slotstore.NodeID
	if route.LeaderNodeID != 0 {
		candidates = append(candidates, route.LeaderNodeID)
	}
	if grp, ok := d.cfg.Controller().Groups[route.GroupID]; ok {
		for _, id := range grp.PeerNodes() {
			if id != route.LeaderNodeID && id != d.cfg.NodeID {
				candidates = append(candidates, id)
			}
		}
	}
	err := rerr
	if err == nil {
		err = slotstore.Errorf(slotstore.CodeRouteNotReady, "no node holds group %d", route.GroupID)
	}
	for _, id := range candidates {
		addr := d.PeerAddrOf(id)
		if addr == "" || (local && id == d.cfg.NodeID) {
			continue
		}
		// Each peer gets at most one hop's time, and the leader loses it
		// the moment another node is known to lead: a read is safe to ask
		// again elsewhere, and a peer cut off by the network only hangs.
		hctx, cancel := context.WithTimeoutCause(ctx, d.cfg.ForwardHopTimeout, errHopDeadline)
		stop := func() {}
		if id == route.LeaderNodeID {
			hctx, _, stop = d.watchLeaderMove(hctx, route.GroupID, id, func() time.Duration { return 0 })
		}
		var v any
		var info meta.ReadInfo
		v, info, err = d.cfg.Peers.Read(hctx, addr, q, c)
		stop()
		cancel()
		if err == nil {
			return v, info, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	if unreached(err) && ctx.Err() == nil {
		d.wake(route.GroupID, route.LeaderNodeID)
	}
	return nil, meta.ReadInfo{ServedBy: d.cfg.NodeID, Route: route}, err
}

// ReadLocal reads through this node's replica, or refuses with not_leader.
func (d *Dispatcher) ReadLocal(ctx context.Context, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error) {
	info := meta.ReadInfo{ServedBy: d.cfg.NodeID}
	route, err := d.cfg.Router.Load().ResolveSlot(q.RouteSlot())
	info.Route = route
	lg := d.cfg.Replicas.All()[route.GroupID]
	if route.GroupID == 0 || lg == nil || lg.SM() == nil {
		if err == nil {
			err = &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: route.LeaderNodeID, LeaderTerm: route.LeaderTerm,
				Message: "this node holds no replica of the group"}
		}
		return nil, info, err
	}
	shard := controller.ShardOf(route.GroupID)
	var v any
	if c == meta.Local {
		v, err = d.cfg.NH.StaleRead(shard, q)
	} else {
		// A replica that knows no leader (restarting, partitioned) cannot
		// complete a ReadIndex: say so now instead of waiting out the deadline.
		if _, _, valid, lerr := d.cfg.NH.GetLeaderID(shard); lerr == nil && !valid {
			return nil, info, &slotstore.Error{Code: slotstore.CodeRouteNotReady, RetryAfter: 500 * time.Millisecond,
				Message: fmt.Sprintf("the replica of group %d here knows no leader yet", route.GroupID)}
		}
		// One round, shared with the reads waiting beside this one
		// (readindex.go; on a leader under its lease no message leaves the
		// node, leasedread.go), then the local state machine.
		if err = lg.Reads.Wait(ctx); err == nil {
			v, err = d.cfg.NH.StaleRead(shard, q)
		}
	}
	info.AppliedIndex = lg.SM().AppliedIndex()
	if err != nil {
		var se *slotstore.Error
		if errors.As(err, &se) {
			return nil, info, se
		}
		return nil, info, propose.RaftError(err, route.GroupID, false)
	}
	return v, info, nil
}

// localReadBudget is how long a linearizable read may wait on the local
// replica before the leader is asked: half the caller's budget, at most 2s.
func localReadBudget(ctx context.Context) time.Duration {
	budget := 2 * time.Second
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d)/2)
	}
	return max(budget, time.Millisecond)
}
