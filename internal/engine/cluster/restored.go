package cluster

import (
	"fmt"
	"log/slog"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/engine/restore"
	"github.com/slotmeta/slotmeta/internal/engine/store"
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
func startRestoredLogs(nh *dragonboat.NodeHost, logdb *raftlog.Factory, db *store.DB, seed *restore.Seed, log *slog.Logger) error {
	for _, s := range seed.Starts {
		shard := controller.ShardOf(s.Group)
		if nh.HasNodeInfo(shard, s.Replica) {
			continue
		}
		// Only while the rows are still laid out for it: a replica that ran
		// (its mark cleared at its first start) and was moved away since
		// has no log to begin.
		if laid, ok, err := fsm.RestoredFor(db, s.Group); err != nil || !ok || laid != s.Replica {
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

// foundedAsLaidOut says whether the cluster was founded as this node's
// restore laid its store out: from the same backup, with the same bump and
// replication factor (the placement's inputs; the members were checked at
// start). Nodes restored with other options than the one whose founding
// won would hold other groups than the founding places on them: this node
// then starts no replica, and says why.
func foundedAsLaidOut(seed *restore.Seed, st *controller.State) error {
	if seed == nil {
		return nil
	}
	r := st.Restored
	rf := min(seed.ReplicationFactor, len(seed.Members))
	if r == nil || r.BackupID != seed.Controller.BackupID || r.RouteRevision != seed.Controller.RouteRevision || st.ReplicationFactor != rf {
		return fmt.Errorf("cluster: this node was restored from backup %s (route revision %d, replication factor %d) but the cluster was founded %s: "+
			"restore every node with the same backup and options", seed.Controller.BackupID, seed.Controller.RouteRevision, rf, foundedAs(st))
	}
	return nil
}

func foundedAs(st *controller.State) string {
	if st.Restored == nil {
		return "new"
	}
	return fmt.Sprintf("from backup %s (route revision %d, replication factor %d)", st.Restored.BackupID, st.Restored.RouteRevision, st.ReplicationFactor)
}
