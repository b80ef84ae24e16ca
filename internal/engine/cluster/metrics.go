package cluster

import (
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/diskguard"
	"github.com/slotmeta/slotmeta/internal/engine/nodemetrics"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// newMetrics makes n's instruments (package nodemetrics) over what their
// collectors read of n at scrape time. The parts made later in Start (the
// store, the replicas, the controller leader) are read through n when a
// scrape comes, as the node's registry is scraped only once it serves.
func newMetrics(n *Node) (*nodemetrics.Metrics, error) {
	return nodemetrics.New(nodemetrics.Config{
		Registerer: n.cfg.Registerer, NodeID: n.cfg.NodeID, Version: n.cfg.Version, DataDir: n.cfg.DataDir, Now: n.cfg.Now,
		Observed: func(now time.Time) ([]slotstore.NodeHealth, []slotstore.GroupView, bool) {
			return n.leader.Observed(now)
		},
		QueueDepths: func() map[slotstore.GroupID]int {
			depths := map[slotstore.GroupID]int{}
			for id, g := range n.replicas.All() {
				depths[id] = g.Proposer.QueueDepth()
			}
			return depths
		},
		StoreStats:      func() store.Stats { return n.db.Stats() },
		RaftCommit:      n.logdb.Commit,
		SnapshotIndex:   n.events.snapshotIndex,
		Controller:      n.ctrl.Load,
		ReplicaFailures: func() []slotstore.ReplicaFailure { return n.replicas.Failures() },
		Snapshots:       func() nodemetrics.SnapshotCounts { return nodemetrics.SnapshotCounts(n.snapshotStats()) },
		Connection:      n.events.connection,
		Disk: func() (diskguard.State, bool) {
			if g := n.disk.g; g != nil {
				return g.State(), true
			}
			return diskguard.State{}, false
		},
	})
}
