package leader

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

// versionStep is the cluster version's part of each observation round
// (ObserveOnce, which API handlers and the task executor call too: one at a
// time under mu).
type versionStep struct {
	mu     sync.Mutex
	behind string // the nodes last logged as running a release older than the cluster version
}

// raise records a newer cluster version once every registered
// node has reported, within UnreachableAfter, that it runs it (a rolling
// upgrade's last node started): from then on the features of that version
// may be proposed (package clusterversion). A node not heard from lately
// holds the version back — it may have been started on the older binary
// since its last report. A decision records the step.
func (v *versionStep) raise(ctx context.Context, l *Leader, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := l.cfg.Host.Controller()
	if !st.Bootstrapped {
		return
	}
	running := l.obs.Versions(now, l.cfg.UnreachableAfter)
	if late := fmt.Sprint(behind(st, running)); late != v.behind {
		v.behind = late
		if late != "[]" {
			l.cfg.Logger.Error("nodes run a release older than the cluster version: they may refuse or misapply what the others apply; start them on a binary of the cluster version or newer",
				"nodes", late, "cluster_version", st.Version())
		}
	}
	next, ok := clusterversion.Next(st.ClusterVersion, registeredNodes(st), running)
	if !ok {
		return
	}
	res, err := l.cfg.Host.Propose(ctx, controller.Command{SetClusterVersion: &controller.SetClusterVersion{Version: next}})
	if err != nil || !res.OK {
		l.cfg.Logger.Warn("could not record the cluster version", "version", next, "err", err, "result", res.Message)
		return
	}
	l.cfg.Logger.Info("cluster version recorded: every node runs it", "version", next, "was", st.Version())
	l.record(slotstore.Decision{Kind: slotstore.DecisionClusterVersion,
		Reason: slotstore.Reason(fmt.Sprintf("cluster version %s recorded (was %s): every node runs %s or newer", next, st.Version(), next))})
}

// behind lists the registered nodes whose latest report says they run a
// version older than the cluster's (a node restarted on an older binary
// of a release before cluster versions, which cannot refuse by itself).
func behind(st *controller.State, running map[slotstore.NodeID]slotstore.Version) []slotstore.NodeID {
	var out []slotstore.NodeID
	for _, id := range registeredNodes(st) {
		if v, ok := running[id]; ok && clusterversion.Running(v).Less(st.Version()) {
			out = append(out, id)
		}
	}
	return out
}
