package leader

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// ObserveOnce collects one status report from every registered node
// (concurrently; a node that does not answer within ctx keeps its last one),
// then updates node health, wakes the groups led from unreachable nodes and
// records a newer cluster version once every node reports running it
// (clusterversion.go).
func (l *Leader) ObserveOnce(ctx context.Context) {
	st := l.cfg.Host.Controller()
	l.obs.Lead(l.cfg.Now())
	registered := registeredNodes(st)
	l.obs.Retain(registered)
	l.load.Forget(func(id slotstore.NodeID) bool { return slices.Contains(registered, id) })
	defer func() {
		now := l.cfg.Now()
		nodes := registeredNodes(l.cfg.Host.Controller())
		l.obs.UpdateHealth(now, nodes, l.cfg.UnreachableAfter)
		if !l.cfg.DisableQuiesce {
			down := map[slotstore.NodeID]bool{}
			for _, h := range l.obs.NodeHealth(now, nodes, l.cfg.NodeID) {
				down[h.Node] = h.Health == slotstore.NodeUnreachable
			}
			l.wakeLedBy(down, l.views(now))
		}
	}()
	var wg sync.WaitGroup
	for _, id := range st.NodeIDs() {
		node := st.Nodes[id]
		if node.State == controller.NodeRemoved {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var status slotstore.NodeStatus
			if id == l.cfg.NodeID {
				status = l.cfg.Host.Status(ctx)
			} else {
				if node.PeerAddr == "" {
					return
				}
				resp, _, err := l.cfg.Peers.Call(ctx, http.MethodGet, node.PeerAddr, "status", nil, nil)
				if err != nil {
					return
				}
				body, err := peer.ReadBody(resp)
				if err != nil || json.Unmarshal(body, &status) != nil {
					return
				}
			}
			at := l.cfg.Now()
			l.obs.Record(id, status, at)
			l.load.Observe(id, at, status.SlotReads, status.SlotWrites)
		}()
	}
	wg.Wait()
	l.version.raise(ctx, l, l.cfg.Now())
}

// registeredNodes are the nodes st lists, removed ones left out.
func registeredNodes(st *controller.State) []slotstore.NodeID {
	var out []slotstore.NodeID
	for _, id := range st.NodeIDs() {
		if st.Nodes[id].State != controller.NodeRemoved {
			out = append(out, id)
		}
	}
	return out
}

// health is every registered node's reachability at now, as observed here.
func (l *Leader) health(now time.Time) []slotstore.NodeHealth {
	return l.obs.NodeHealth(now, registeredNodes(l.cfg.Host.Controller()), l.cfg.NodeID)
}

// decisionViews are the views the reconciler and the high-water marks
// decide from: the observed ones, or the test's (Config.Views).
func (l *Leader) decisionViews(now time.Time) []slotstore.GroupView {
	if l.cfg.Views != nil {
		return l.cfg.Views(now)
	}
	return l.views(now)
}

// views builds every group's view from the intent and the latest reports.
func (l *Leader) views(now time.Time) []slotstore.GroupView {
	vs := l.obs.Aggregate(l.cfg.Host.Controller(), now, l.cfg.NodeID, l.cfg.UnreachableAfter)
	last := l.LastChecks()
	for i := range vs {
		if c, ok := last[vs[i].ID]; ok {
			vs[i].LastCheck = &c
		}
	}
	return vs
}

// Observed is what this node observes of the cluster at now — every node's
// reachability and every group's view — and false when it does not lead the
// controller (its metrics then report nothing).
func (l *Leader) Observed(now time.Time) ([]slotstore.NodeHealth, []slotstore.GroupView, bool) {
	if !l.Leads() {
		return nil, nil, false
	}
	return l.health(now), l.views(now), true
}

// NodeHealth returns every registered node's reachability as the
// controller leader observes it (asked over peer RPC when it is another
// node).
func (l *Leader) NodeHealth(ctx context.Context) ([]slotstore.NodeHealth, error) {
	if l.Leads() {
		return l.health(l.cfg.Now()), nil
	}
	return ask[[]slotstore.NodeHealth](ctx, l, "health")
}

// Groups returns every group's intent and observed fact, as aggregated by
// the controller leader (asked over peer RPC when it is another node).
func (l *Leader) Groups(ctx context.Context) ([]slotstore.GroupView, error) {
	if l.Leads() {
		return l.views(l.cfg.Now()), nil
	}
	return ask[[]slotstore.GroupView](ctx, l, "groups")
}

// Group returns one group's view.
func (l *Leader) Group(ctx context.Context, g slotstore.GroupID) (slotstore.GroupView, error) {
	views, err := l.Groups(ctx)
	if err != nil {
		return slotstore.GroupView{}, err
	}
	for _, v := range views {
		if v.ID == g {
			return v, nil
		}
	}
	return slotstore.GroupView{}, slotstore.Errorf(slotstore.CodeNotFound, "group %d does not exist", g)
}

// refresh collects fresh reports unless the last round is recent.
func (l *Leader) refresh(ctx context.Context) {
	if !l.obs.Fresh(l.cfg.Now(), l.cfg.ObserveInterval) {
		octx, cancel := context.WithTimeout(ctx, time.Second)
		l.ObserveOnce(octx)
		cancel()
	}
}

// wakeLedBy wakes (in one batch per node) every group whose observed leader
// is on one of the unreachable nodes.
func (l *Leader) wakeLedBy(unreachable map[slotstore.NodeID]bool, views []slotstore.GroupView) {
	if l.cfg.DisableQuiesce || len(unreachable) == 0 {
		return
	}
	byLeader := map[slotstore.NodeID][]slotstore.GroupID{}
	for _, v := range views {
		if unreachable[v.Leader] {
			byLeader[v.Leader] = append(byLeader[v.Leader], v.ID)
		}
	}
	for leader, groups := range byLeader { // one batch per node, which is not asked
		l.cfg.Host.Wake(groups, leader)
	}
}
