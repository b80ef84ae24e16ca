package cluster

import (
	"fmt"
	"log/slog"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/slotstore/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore/raftlog"
	"github.com/slotmeta/slotmeta/internal/slotstore/restore"
)

// A node whose data directory a restore laid out (package restore) starts
// as a founding member of the restored cluster: the seed gives its
// identity, where its replicas' logs begin, and the founding to propose.

// readRestoreSeed reads the data directory's seed, if any, and makes cfg
// agree with it: the restored cluster's id and Raft deployment id, its
// replication factor. A node started with other founding members than the
// ones its store was laid out for is refused.
func readRestoreSeed(cfg *Config) (*restore.Seed, error) {
	seed, ok, err := restore.ReadSeed(cfg.DataDir)
	if err != nil || !ok {
		return nil, err
	}
	if seed.NodeID != cfg.NodeID {
		return nil, fmt.Errorf("cluster: this data directory was restored for node %d, not %d", seed.NodeID, cfg.NodeID)
	}
	if err := seed.CheckMembers(cfg.InitialMembers); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if cfg.ClusterID != seed.ClusterID {
		cfg.Logger.Info("restored data directory: the cluster id is the restore's", "cluster_id", seed.ClusterID)
	}
	cfg.ClusterID, cfg.DeploymentID, cfg.ReplicationFactor = seed.ClusterID, seed.DeploymentID, seed.ReplicationFactor
	return seed, nil
}

// startRestoredLogs records where the logs of the seed's replicas begin,
// for each one that has not run here yet (dragonboat knows the ones that
// did: their own log goes on). The NodeHost runs; no replica does yet.
func startRestoredLogs(nh *dragonboat.NodeHost, logdb *raftlog.Factory, seed *restore.Seed, log *slog.Logger) error {
	for _, s := range seed.Starts {
		shard := controller.ShardOf(s.Group)
		if nh.HasNodeInfo(shard, s.Replica) {
			continue
		}
		if err := logdb.StartAt(raftlog.Start{Shard: shard, Replica: s.Replica, Index: s.Index, Term: s.Term, Members: s.Members}); err != nil {
			return fmt.Errorf("cluster: the restored log of group %d: %w", s.Group, err)
		}
		log.Info("restored group's log begins", "group", s.Group, "replica", s.Replica, "index", s.Index)
	}
	return nil
}

// founding is the Bootstrap a founding member proposes: a new cluster's,
// or the restored one's (seed not nil).
func founding(cfg *Config, secret string, seed *restore.Seed) *controller.Bootstrap {
	b := &controller.Bootstrap{ClusterID: cfg.ClusterID, GroupCount: cfg.GroupCount, ReplicationFactor: cfg.ReplicationFactor,
		Nodes: cfg.InitialMembers, PeerSecret: secret}
	if seed != nil {
		r := seed.Controller
		b.Restore = &r
		b.GroupCount = len(r.Groups)
	}
	return b
}
