package nodemetrics

import (
	"sync/atomic"

	"github.com/lni/dragonboat/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// raftCollector reports, from every node about itself, each Raft replica it
// runs (the slot groups' and the controller's): whether it knows a leader,
// whether it is the leader, the term, its log's last index, the commit
// index Raft handed its log, and its newest snapshot's index. These are
// what an alert needs when most of the cluster is gone — the controller
// leader's own view (group_under_replicated, group_live_voters) vanishes
// with the controller's quorum, but every surviving node still says that
// its replicas know no leader.
//
// Concurrency contract: the NodeHost is read through an atomic pointer set
// once it runs, and under the scrape gate, stopped before it closes.
type raftCollector struct {
	nh                             atomic.Pointer[dragonboat.NodeHost] // set once the NodeHost runs
	hasLeader, isLeader, term, log *prometheus.Desc
	commit, snapshot               *prometheus.Desc
	commitOf                       func(shard, replica uint64) (uint64, bool) // raftlog.Factory.Commit
	snapshotOf                     func(shard uint64) (uint64, bool)          // the node's count of snapshots
	scrapeGate
}

func newRaftCollector(commitOf func(shard, replica uint64) (uint64, bool), snapshotOf func(shard uint64) (uint64, bool)) *raftCollector {
	labels := []string{"group"}
	return &raftCollector{commitOf: commitOf, snapshotOf: snapshotOf,
		commit: prometheus.NewDesc("slotmeta_replica_commit_index",
			"The commit index Raft handed this node's log of the group (saved with its next entries or vote).", labels, nil),
		snapshot: prometheus.NewDesc("slotmeta_replica_snapshot_index",
			"The index of the newest snapshot of this node's replica of the group it took, received or recovered since the node started.", labels, nil),
		hasLeader: prometheus.NewDesc("slotmeta_replica_has_leader",
			`1 when this node's replica of the group knows a leader, else 0 (group "controller": the controller group).`, labels, nil),
		isLeader: prometheus.NewDesc("slotmeta_replica_is_leader", "1 when this node's replica leads the group.", labels, nil),
		term:     prometheus.NewDesc("slotmeta_replica_term", "The Raft term this node's replica of the group is in.", labels, nil),
		log:      prometheus.NewDesc("slotmeta_replica_log_last_index", "The last index of this node's Raft log of the group.", labels, nil),
	}
}

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.hasLeader
	ch <- c.isLeader
	ch <- c.term
	ch <- c.log
	ch <- c.commit
	ch <- c.snapshot
}

func (c *raftCollector) Collect(ch chan<- prometheus.Metric) { c.collect(func() { c.collectRaft(ch) }) }

func (c *raftCollector) collectRaft(ch chan<- prometheus.Metric) {
	nh := c.nh.Load()
	if nh == nil {
		return
	}
	info := nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true})
	for _, si := range info.ShardInfoList {
		group, ok := groupLabel(si.ShardID)
		if !ok {
			continue
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, group)
		}
		gauge(c.hasLeader, b2f(si.LeaderID != 0))
		gauge(c.isLeader, b2f(si.LeaderID != 0 && si.LeaderID == si.ReplicaID)) // ShardInfo.IsLeader is never set (node.go: getShardInfo)
		gauge(c.term, float64(si.Term))
		if lr, err := nh.GetLogReader(si.ShardID); err == nil {
			_, last := lr.GetRange()
			gauge(c.log, float64(last))
		}
		if commit, ok := c.commitOf(si.ShardID, si.ReplicaID); ok {
			gauge(c.commit, float64(commit))
		}
		if index, ok := c.snapshotOf(si.ShardID); ok {
			gauge(c.snapshot, float64(index))
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
