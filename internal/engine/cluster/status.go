package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/replicas"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// LocalStatus reports every slot group replica on this node: applied index
// (from the state machine), log range, leader view, role, config change
// index — and, for the groups it leads, the membership it applies.
func (n *Node) LocalStatus(ctx context.Context) slotstore.NodeStatus {
	out := slotstore.NodeStatus{Node: n.cfg.NodeID, AtMs: n.cfg.Now().UnixMilli(), Version: n.cfg.Version, DiskLow: n.disk.g.State().Low}
	out.SlotReads, out.SlotWrites = n.heat.Snapshot()
	if f := n.replicas.Failures(); len(f) > 0 {
		out.Failed = f
	}
	info := n.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true})
	shards := map[uint64]int{}
	held := map[uint64]bool{}
	for i, si := range info.ShardInfoList {
		shards[si.ShardID] = i
		held[si.ShardID] = true
	}
	defer n.members.retain(held)
	for id, lg := range n.replicas.All() {
		shard := controller.ShardOf(id)
		rs := slotstore.ReplicaStatus{Group: id, ReplicaID: lg.ReplicaID, Node: n.cfg.NodeID}
		if s := lg.SM(); s != nil {
			rs.AppliedIndex = s.AppliedIndex()
		}
		if lr, err := n.nh.GetLogReader(shard); err == nil {
			rs.LogFirst, rs.LogLast = lr.GetRange()
		}
		if i, ok := shards[shard]; ok {
			si := info.ShardInfoList[i]
			rs.LeaderReplica, rs.Term = si.LeaderID, si.Term
			rs.NonVoting, rs.ConfigChangeIndex = si.IsNonVoting, si.ConfigChangeIndex
		}
		if rs.LeaderReplica == lg.ReplicaID && rs.LeaderReplica != 0 {
			mctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			if m, err := n.members.get(mctx, shard, rs.ConfigChangeIndex, n.nh.SyncGetShardMembership); err == nil {
				rs.Voters, rs.NonVoters, rs.ConfigChangeID = m.Nodes, m.NonVotings, m.ConfigChangeID
				rs.HeardAgoMs = map[uint64]int64{}
				for _, members := range []map[uint64]string{m.Nodes, m.NonVotings} {
					for rid := range members {
						if rid == lg.ReplicaID {
							continue
						}
						rs.HeardAgoMs[rid] = -1
						if ago, ok := n.heard.Ago(shard, rid); ok {
							rs.HeardAgoMs[rid] = ago.Milliseconds()
						}
						if wait := n.heard.Unanswered(shard, rid); wait > 0 {
							if rs.UnansweredMs == nil {
								rs.UnansweredMs = map[uint64]int64{}
							}
							rs.UnansweredMs[rid] = wait.Milliseconds()
						}
					}
				}
			}
			cancel()
		}
		if kind, ago := n.replicas.Disruption(shard); kind != "" {
			rs.Disruption, rs.DisruptedAgoMs = kind, ago.Milliseconds()
		}
		rs.SnapshotBytes = n.heard.SnapshotBytes(shard, lg.ReplicaID)
		out.Replicas = append(out.Replicas, rs)
	}
	return out
}

func (p peerAPI) servePeerStatus(ctx context.Context, w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p.n.LocalStatus(ctx))
}

// Ownership reports the hash-slot ownership of every slot-group replica on
// this node whose state machine is open, in group order: for invariant
// checks (every hash slot owned by exactly one group) and diagnostics.
func (n *Node) Ownership() []replicas.Ownership { return n.replicas.Ownership() }
