package cluster

import (
	"context"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/meta"
)

// Propose replicates cmd through the group owning its route key's hash slot.
func (n *Node) Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error) {
	hs := slotstore.HashSlotOfString(cmd.RouteKey())
	route, err := n.router.Load().ResolveSlot(hs)
	if err != nil {
		n.metrics.proposal(route.GroupID, slotstore.ErrorCode(err))
		return meta.Result{}, route, err
	}
	lg := (*n.groups.Load())[route.GroupID]
	if lg == nil {
		err := &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: route.LeaderNodeID,
			Message: "this node holds no replica of the group (forwarding is not available yet)"}
		n.metrics.proposal(route.GroupID, err.Code)
		return meta.Result{}, route, err
	}
	h := cmd.Head()
	h.HashSlot = hs
	h.TimeMs = n.cfg.Now().UnixMilli()
	enc := meta.EncodeCommand(cmd)
	// What every replica will decode must decode here first: a field over a
	// codec limit is the caller's mistake, not a poisoned log entry.
	if _, derr := meta.DecodeCommand(enc); derr != nil {
		err := slotstore.Wrap(slotstore.CodeInvalidArgument, derr, "command exceeds a codec limit")
		n.metrics.proposal(route.GroupID, err.Code)
		return meta.Result{}, route, err
	}
	res, err := lg.proposer.Submit(ctx, enc)
	if err == nil && res.Code == slotstore.CodeWrongGroup {
		// The group no longer owns the slot: the route moved under us.
		err = &slotstore.Error{Code: slotstore.CodeWrongGroup, Message: res.Message, RouteRevision: route.RouteRevision}
	}
	code := slotstore.ErrorCode(err)
	if err == nil {
		code = res.Code
	}
	n.metrics.proposal(route.GroupID, code)
	return res, route, err
}

// Read answers q from the group owning its hash slot, through a local replica.
func (n *Node) Read(ctx context.Context, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error) {
	info := meta.ReadInfo{ServedBy: n.cfg.NodeID}
	route, err := n.router.Load().ResolveSlot(q.RouteSlot())
	info.Route = route
	// A local read needs no live leader, only a local replica.
	if err != nil && !(c == meta.Local && route.GroupID != 0) {
		return nil, info, err
	}
	lg := (*n.groups.Load())[route.GroupID]
	if lg == nil || lg.sm.Load() == nil {
		return nil, info, &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: route.LeaderNodeID,
			Message: "this node holds no replica of the group (forwarding is not available yet)"}
	}
	shard := controller.ShardOf(route.GroupID)
	var v any
	if c == meta.Local {
		v, err = n.nh.StaleRead(shard, q)
	} else {
		v, err = n.nh.SyncRead(ctx, shard, q)
	}
	info.AppliedIndex = lg.sm.Load().AppliedIndex()
	if err != nil {
		var se *slotstore.Error
		if asError(err, &se) {
			return nil, info, se
		}
		return nil, info, raftError(err, route.GroupID, false)
	}
	return v, info, nil
}
