package cluster

import (
	"context"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Leader leases rest on every follower's election timeout (propose/lease.go):
// each node reports the Raft timing it runs into the controller state, and
// a group's leader grants itself no longer a lease than the shortest timing
// among the group's replicas allows — none while one of them has not
// reported. A node started with shorter timing than the rest (a mistake,
// or a rolling change of --rtt / --election-rtt) shortens the leases of its
// groups instead of making them unsafe.

// leaseLimit is the longest lease group g's replicas allow in st.
func leaseLimit(st *controller.State, g slotstore.GroupID) time.Duration {
	nodes := st.ReplicaNodes(g)
	if len(nodes) == 0 {
		return 0
	}
	limit := time.Duration(-1)
	for _, node := range nodes {
		t, ok := st.Timing[node]
		if !ok {
			return 0
		}
		if d := propose.LeaseDuration(t.RTT(), t.ElectionRTT); limit < 0 || d < limit {
			limit = d
		}
	}
	return max(limit, 0)
}

// reportTiming records this node's Raft timing in the controller state when
// it is not there yet (or differs); the next reconcile round tries again if
// it fails.
func (f follower) reportTiming(ctx context.Context, st *controller.State) {
	if _, ok := st.Nodes[f.n.cfg.NodeID]; !ok {
		return
	}
	own := controller.TimingOf(f.n.cfg.RTT, f.n.cfg.ElectionRTT)
	if cur, ok := st.Timing[f.n.cfg.NodeID]; ok && cur == own {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, f.n.cfg.RequestTimeout)
	defer cancel()
	if err := f.n.ctl.proposeController(cctx, controller.Command{RaftTiming: &controller.SetRaftTiming{Node: f.n.cfg.NodeID, Timing: own}}); err != nil {
		f.n.cfg.Logger.Debug("report raft timing", "err", err)
	}
}
