package cluster

import (
	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// localView is the node's own replicas as it sees them — role, the leader
// it knows and its term, applied and last log index — from its NodeHost
// alone, with no request to any other node (issue 30): what a surviving
// node shows when the controller lost its quorum and the controller
// leader's views are gone. The controller replica is group 0.
func localView(n *Node, st *controller.State) []slotstore.LocalReplica {
	info := n.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true})
	shards := map[uint64]dragonboat.ShardInfo{}
	for _, si := range info.ShardInfoList {
		shards[si.ShardID] = si
	}
	out := []slotstore.LocalReplica{}
	add := func(g slotstore.GroupID, shard, replica, applied uint64, nodeOf func(uint64) slotstore.NodeID) {
		r := slotstore.LocalReplica{Group: g, ReplicaID: replica, Role: slotstore.RoleVoter, AppliedIndex: applied}
		if si, ok := shards[shard]; ok {
			r.Term = si.Term
			if si.IsNonVoting {
				r.Role = slotstore.RoleLearner
			}
			if si.LeaderID != 0 {
				r.Leader = nodeOf(si.LeaderID)
			}
		}
		if lr, err := n.nh.GetLogReader(shard); err == nil {
			_, r.LogLast = lr.GetRange()
		}
		out = append(out, r)
	}
	// The controller's replica ids are node ids.
	add(0, controller.ShardID, uint64(n.cfg.NodeID), st.AppliedIndex, func(id uint64) slotstore.NodeID { return slotstore.NodeID(id) })
	all := n.replicas.All()
	for _, g := range st.GroupIDs() {
		lg := all[g]
		if lg == nil {
			continue
		}
		var applied uint64
		if s := lg.SM(); s != nil {
			applied = s.AppliedIndex()
		}
		add(g, controller.ShardOf(g), lg.ReplicaID, applied, func(id uint64) slotstore.NodeID {
			node, _ := st.NodeOfReplica(g, id)
			return node
		})
	}
	return out
}

// peerView is who this node hears from, from its own Raft transport alone
// (issue 54): for every other registered node, how long ago a Raft message
// of any replica of it arrived here (the controller's, or a group's both
// hold a replica of; -1: never since this process started) and whether
// this node's last Raft connection to it succeeded (nil: none tried).
func peerView(n *Node, st *controller.State) []slotstore.PeerView {
	all := n.replicas.All()
	out := []slotstore.PeerView{}
	for _, id := range st.NodeIDs() {
		node := st.Nodes[id]
		if id == n.cfg.NodeID || node.State == controller.NodeRemoved {
			continue
		}
		v := slotstore.PeerView{Node: id, HeardAgoMs: -1}
		heard := func(shard, replica uint64) {
			if ago, ok := n.heard.Ago(shard, replica); ok && (v.HeardAgoMs < 0 || ago.Milliseconds() < v.HeardAgoMs) {
				v.HeardAgoMs = ago.Milliseconds()
			}
		}
		heard(controller.ShardID, uint64(id)) // the controller's replica ids are node ids
		for g, lg := range all {
			if grp := st.Groups[g]; lg != nil && grp != nil {
				if rid, ok := grp.Peers[id]; ok {
					heard(controller.ShardOf(g), rid)
				}
			}
		}
		if up, _, known := n.events.connection(node.RaftAddr); known {
			v.Connected = &up
		}
		out = append(out, v)
	}
	return out
}
