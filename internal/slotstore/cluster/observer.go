package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/peer"
)

// tasksStepsPerRound bounds the steps of one task in one observe round.
const tasksStepsPerRound = 32

// isControllerLeader reports whether this node leads the controller group.
func (n *Node) isControllerLeader() bool { return n.ctrlLeader.Load() == uint64(n.cfg.NodeID) }

// observeLoop polls the nodes while this node leads the controller, then
// runs the reconciler. It is owned by the Node and ends with it.
func (n *Node) observeLoop() {
	defer n.bg.Done()
	if n.cfg.ObserveInterval < 0 {
		return // driven by tests through ObserveOnce / ReconcileOnce
	}
	t := time.NewTicker(n.cfg.ObserveInterval)
	defer t.Stop()
	// The first round after taking the lead comes a full interval later:
	// the reports and load rates must fill in first.
	lastBalance := n.cfg.Now()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if !n.isControllerLeader() {
			n.obs.StepDown()
			lastBalance = n.cfg.Now()
			continue
		}
		ctx, cancel := context.WithTimeout(n.life, n.cfg.ObserveInterval)
		n.ObserveOnce(ctx)
		cancel()
		n.ReconcileOnce(n.cfg.Now())
		tctx, tcancel := context.WithTimeout(n.life, 2*n.cfg.RequestTimeout)
		if n.isControllerLeader() {
			n.tasks.Drive(tctx, tasksStepsPerRound)
		}
		tcancel()
		if n.cfg.BalanceInterval > 0 && n.isControllerLeader() && n.cfg.Now().Sub(lastBalance) >= n.cfg.BalanceInterval {
			lastBalance = n.cfg.Now()
			bctx, bcancel := context.WithTimeout(n.life, 2*n.cfg.RequestTimeout)
			n.BalanceOnce(bctx, lastBalance)
			bcancel()
		}
	}
}

// ObserveOnce collects one status report from every registered node
// (concurrently; a node that does not answer within ctx keeps its last one).
func (n *Node) ObserveOnce(ctx context.Context) {
	st := n.ctrl.Load()
	n.obs.Lead(n.cfg.Now())
	registered := n.registeredNodes()
	n.obs.Retain(registered)
	n.load.Forget(func(id slotstore.NodeID) bool { return slices.Contains(registered, id) })
	defer func() {
		now := n.cfg.Now()
		n.obs.UpdateHealth(now, n.registeredNodes(), n.cfg.UnreachableAfter)
		if !n.cfg.DisableQuiesce {
			down := map[slotstore.NodeID]bool{}
			for _, h := range n.obs.NodeHealth(now, n.registeredNodes(), n.cfg.NodeID) {
				down[h.Node] = h.Health == slotstore.NodeUnreachable
			}
			n.wakeLedBy(down, n.views(now))
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
			if id == n.cfg.NodeID {
				status = n.LocalStatus(ctx)
			} else {
				if node.PeerAddr == "" {
					return
				}
				resp, _, err := n.peers.Call(ctx, http.MethodGet, node.PeerAddr, "status", nil, nil)
				if err != nil {
					return
				}
				body, err := peer.ReadBody(resp)
				if err != nil || json.Unmarshal(body, &status) != nil {
					return
				}
			}
			at := n.cfg.Now()
			n.obs.Record(id, status, at)
			n.load.Observe(id, at, status.SlotReads, status.SlotWrites)
		}()
	}
	wg.Wait()
}

// registeredNodes are the nodes the controller lists, removed ones left out.
func (n *Node) registeredNodes() []slotstore.NodeID {
	st := n.ctrl.Load()
	var out []slotstore.NodeID
	for _, id := range st.NodeIDs() {
		if st.Nodes[id].State != controller.NodeRemoved {
			out = append(out, id)
		}
	}
	return out
}

// NodeHealth returns every registered node's reachability as the
// controller leader observes it (asked over peer RPC when it is another
// node).
func (n *Node) NodeHealth(ctx context.Context) ([]slotstore.NodeHealth, error) {
	if n.isControllerLeader() {
		return n.obs.NodeHealth(n.cfg.Now(), n.registeredNodes(), n.cfg.NodeID), nil
	}
	return askControllerLeader[[]slotstore.NodeHealth](ctx, n, "health")
}

// views builds every group's view from the intent and the latest reports.
func (n *Node) views(now time.Time) []slotstore.GroupView {
	return n.obs.Aggregate(n.ctrl.Load(), now, n.cfg.NodeID, n.cfg.UnreachableAfter)
}

// Groups returns every group's intent and observed fact, as aggregated by
// the controller leader (asked over peer RPC when it is another node).
func (n *Node) Groups(ctx context.Context) ([]slotstore.GroupView, error) {
	if n.isControllerLeader() {
		return n.views(n.cfg.Now()), nil
	}
	return askControllerLeader[[]slotstore.GroupView](ctx, n, "groups")
}

// askControllerLeader GETs one of the views only the controller leader
// holds (groups, health) over peer RPC.
func askControllerLeader[T any](ctx context.Context, n *Node, path string) (T, error) {
	var out T
	leader := slotstore.NodeID(n.ctrlLeader.Load())
	addr := n.dispatch.PeerAddrOf(leader)
	if leader == 0 || addr == "" {
		return out, slotstore.Errorf(slotstore.CodeRouteNotReady, "the controller leader is unknown")
	}
	resp, _, err := n.peers.Call(ctx, http.MethodGet, addr, path, nil, nil)
	if err != nil {
		return out, err
	}
	body, err := peer.ReadBody(resp)
	if err != nil {
		return out, slotstore.Wrap(slotstore.CodeTimeout, err, "reading the controller leader's answer")
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return out, slotstore.Wrap(slotstore.CodeInternal, err, "undecodable answer of the controller leader")
	}
	return out, nil
}

func (n *Node) servePeerGroups(_ context.Context, w http.ResponseWriter, _ *http.Request) {
	serveControllerView(n, w, func() []slotstore.GroupView { return n.views(n.cfg.Now()) })
}

func (n *Node) servePeerHealth(_ context.Context, w http.ResponseWriter, _ *http.Request) {
	serveControllerView(n, w, func() []slotstore.NodeHealth { return n.obs.NodeHealth(n.cfg.Now(), n.registeredNodes(), n.cfg.NodeID) })
}

// serveControllerView answers a view only the controller leader holds.
func serveControllerView[T any](n *Node, w http.ResponseWriter, view func() T) {
	if !n.isControllerLeader() {
		peer.WriteError(w, http.StatusServiceUnavailable, &slotstore.Error{Code: slotstore.CodeNotLeader,
			LeaderHint: slotstore.NodeID(n.ctrlLeader.Load()), Message: "this node does not lead the controller"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(view())
}
