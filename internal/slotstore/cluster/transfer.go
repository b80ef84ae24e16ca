package cluster

import (
	"context"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
)

// TransferLeader asks group g's Raft to hand leadership to node target and
// waits until this node observes target as the leader (or ctx ends). The
// request is best effort in Raft: an answer of timeout means the leader did
// not move in time, not that it never will. This node must hold a replica of
// g. (Safety checks and the operator API build on this.)
func (n *Node) TransferLeader(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID) error {
	grp, ok := n.ctrl.Load().Groups[g]
	if !ok {
		return slotstore.Errorf(slotstore.CodeNotFound, "group %d does not exist", g)
	}
	replica, ok := grp.Peers[target]
	if !ok {
		return slotstore.Errorf(slotstore.CodeConflict, "node %d is not a desired peer of group %d", target, g)
	}
	if (*n.groups.Load())[g] == nil {
		return slotstore.Errorf(slotstore.CodeNotLeader, "node %d holds no replica of group %d", n.cfg.NodeID, g)
	}
	shard := controller.ShardOf(g)
	if err := n.nh.RequestLeaderTransfer(shard, replica); err != nil {
		return raftError(err, g, false)
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		leader, term, valid, err := n.nh.GetLeaderID(shard)
		if err == nil && valid && leader == replica {
			n.router.SetLeader(g, target, term)
			return nil
		}
		select {
		case <-ctx.Done():
			return &slotstore.Error{Code: slotstore.CodeTimeout, Message: "the new leader was not observed in time", Err: ctx.Err()}
		case <-t.C:
		}
	}
}
