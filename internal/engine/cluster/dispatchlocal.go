package cluster

import (
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/dispatch"
	"github.com/slotmeta/slotmeta/internal/engine/raftnet"
	"github.com/slotmeta/slotmeta/internal/engine/replicas"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// localReplicas is the node's replicas as its dispatcher sees them
// (dispatch.Local): the running replica set and the Raft transport's record
// of what each replica last heard.
type localReplicas struct {
	replicas *replicas.Set
	ctrl     func() *controller.State
	heard    *raftnet.Heard
}

// Replica is the open replica of g here, or nil.
func (l localReplicas) Replica(g slotstore.GroupID) dispatch.Replica {
	if r := l.replicas.Get(g); r.Open() {
		return r
	}
	return nil
}

// HeardAgo is how long ago this node's replica of g heard from node's.
func (l localReplicas) HeardAgo(g slotstore.GroupID, node slotstore.NodeID) (time.Duration, bool) {
	grp, ok := l.ctrl().Groups[g]
	if !ok || l.replicas.Get(g) == nil {
		return 0, false
	}
	return l.heard.Ago(controller.ShardOf(g), grp.Peers[node])
}

// GetRows reads each group's part from its replica here, all from one view
// of the store (replicas.Set.GetRows).
func (l localReplicas) GetRows(groups []slotstore.GroupID, qs []*meta.GetRows) ([]*meta.RowBatch, error) {
	return l.replicas.GetRows(groups, qs)
}
