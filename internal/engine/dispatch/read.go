package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/heat"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// The read path: a query to a replica that holds its group.

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
	return d.read(ctx, q, c, nil)
}

// read is Read, not counted. localErr, when set, is what the local replica
// just answered (ReadRows asked it): the first attempt asks only peers.
func (d *Dispatcher) read(ctx context.Context, q meta.Query, c meta.Consistency, localErr error) (any, meta.ReadInfo, error) {
	waitUntil := time.Now().Add(d.cfg.LeaderWait)
	for round := 1; ; round++ {
		change, route, rerr := d.resolveWatching(q.RouteSlot())
		if err := d.readsFenced(route.GroupID); err != nil {
			return nil, meta.ReadInfo{}, err
		}
		var v any
		var info meta.ReadInfo
		var err error
		if round == 1 && localErr != nil && route.GroupID != 0 {
			v, info, err = d.readPeers(ctx, q, c, route, true, localErr)
		} else {
			v, info, err = d.readOnce(ctx, q, c, route, rerr)
		}
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
	if d.cfg.Local.Replica(route.GroupID) != nil {
		if c == meta.Local {
			return d.ReadLocal(ctx, q, c)
		}
		if d.cfg.Behind != nil && route.LeaderNodeID != d.cfg.NodeID && d.cfg.Behind() {
			return d.readPeers(ctx, q, c, route, true, rerr)
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
	return d.readPeers(ctx, q, c, route, local, rerr)
}

// readPeers asks the nodes that hold a replica of route's group, the
// leader first (local: this node's replica was asked already; rerr: the
// error to answer if none is asked).
func (d *Dispatcher) readPeers(ctx context.Context, q meta.Query, c meta.Consistency, route slotstore.Route, local bool, rerr error) (any, meta.ReadInfo, error) {
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
	var lg Replica
	if route.GroupID != 0 {
		lg = d.cfg.Local.Replica(route.GroupID)
	}
	if lg == nil {
		if err == nil {
			err = &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: route.LeaderNodeID, LeaderTerm: route.LeaderTerm,
				Message: "this node holds no replica of the group"}
		}
		return nil, info, err
	}
	var v any
	if c == meta.Local {
		v, err = lg.Read(q)
	} else {
		// A replica that knows no leader (restarting, partitioned) cannot
		// complete a ReadIndex: say so now instead of waiting out the deadline.
		if !lg.LeaderKnown() {
			return nil, info, &slotstore.Error{Code: slotstore.CodeRouteNotReady, RetryAfter: 500 * time.Millisecond,
				Message: fmt.Sprintf("the replica of group %d here knows no leader yet", route.GroupID)}
		}
		// One round, shared with the reads waiting beside this one
		// (readindex.go; on a leader under its lease no message leaves the
		// node, leasedread.go), then the local state machine.
		if err = lg.AwaitRead(ctx); err == nil {
			v, err = lg.Read(q)
		}
	}
	info.AppliedIndex = lg.AppliedIndex()
	if err != nil {
		return nil, info, err // typed by the replica (Replica's contract)
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

// readsFenced refuses the reads of group g while a state check found its
// replicas differing with no majority (controller/readfence.go): none of
// them may be trusted to answer.
func (d *Dispatcher) readsFenced(g slotstore.GroupID) error {
	if g == 0 {
		return nil
	}
	if f := d.cfg.Controller().ReadsFenced(g); f != nil {
		return slotstore.Errorf(slotstore.CodeFailedPrecondition,
			"group %d's reads are fenced: its replicas hold different rows and no majority agrees (%s); an operator rebuilds the wrong replicas and checks again (docs/runbook.md)", g, f.Reason)
	}
	return nil
}
