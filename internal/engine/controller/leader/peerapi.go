package leader

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Register puts the endpoints only the controller leader answers on the
// node's peer server: groups, health, balancer, balancer-plan, and
// transfer (a raw one on the group leader's node, a checked one on the
// controller leader).
func (l *Leader) Register(s *peer.Server) {
	s.Handle(http.MethodGet, "groups", serveView(l, func(context.Context) []slotstore.GroupView { return l.views(l.cfg.Now()) }))
	s.Handle(http.MethodGet, "health", serveView(l, func(context.Context) []slotstore.NodeHealth { return l.health(l.cfg.Now()) }))
	s.Handle(http.MethodGet, "balancer", serveView(l, func(ctx context.Context) slotstore.BalancerStatus { st, _ := l.Balancer(ctx); return st }))
	s.Handle(http.MethodGet, "balancer-plan", serveView(l, func(ctx context.Context) slotstore.BalancePlan { p, _ := l.BalancerPlan(ctx); return p }))
	s.Handle(http.MethodGet, "heat", serveView(l, func(context.Context) slotstore.SlotHeat { return l.heat() }))
	s.Handle(http.MethodPost, "transfer", l.serveTransfer)
	s.Handle(http.MethodPost, "check", l.serveCheck)
}

// Heat returns the hash slots' heat map, as the controller leader counted
// it (asked of it when this node does not lead).
func (l *Leader) Heat(ctx context.Context) (slotstore.SlotHeat, error) {
	if !l.Leads() {
		return ask[slotstore.SlotHeat](ctx, l, "heat")
	}
	return l.heat(), nil
}

func (l *Leader) heat() slotstore.SlotHeat {
	h := l.load.Heat()
	h.Aggregator = l.cfg.NodeID
	return h
}

// notLeader is the refusal of a node that does not lead the controller.
func (l *Leader) notLeader() error {
	return &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: l.cfg.Host.ControllerLeader(),
		Message: "this node does not lead the controller"}
}

// serveView answers a view only the controller leader holds.
func serveView[T any](l *Leader, view func(context.Context) T) peer.HandlerFunc {
	return func(ctx context.Context, w http.ResponseWriter, _ *http.Request) {
		if !l.Leads() {
			peer.WriteError(w, http.StatusServiceUnavailable, l.notLeader())
			return
		}
		// The asker's own writes first: its proposal returned once its
		// replica applied it, which this one (the leader's) may not have
		// yet — a balancer paused through node 1 answered "not paused".
		if err := l.cfg.Host.SyncController(ctx); err != nil {
			peer.WriteError(w, peer.StatusOf(err), err)
			return
		}
		peer.WriteJSON(w, view(ctx))
	}
}

// ask GETs one of the views only the controller leader holds over peer RPC.
func ask[T any](ctx context.Context, l *Leader, path string) (T, error) {
	return askWith[T](ctx, l, http.MethodGet, path, nil)
}

// askWith asks the controller leader over peer RPC and decodes its answer.
func askWith[T any](ctx context.Context, l *Leader, method, path string, body []byte) (T, error) {
	leader := l.cfg.Host.ControllerLeader()
	addr := l.cfg.Host.PeerAddr(leader)
	if leader == 0 || addr == "" {
		var out T
		return out, slotstore.Errorf(slotstore.CodeRouteNotReady, "the controller leader is unknown")
	}
	return peer.CallJSON[T](ctx, l.cfg.Peers, method, addr, path, body, "the controller leader's answer")
}

// serveTransfer carries out a raw transfer on the group leader's node, or
// decides a checked one (a dry run, or ?checked=1) on the controller leader.
func (l *Leader) serveTransfer(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req transferRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		peer.WriteError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "transfer request"))
		return
	}
	if !req.DryRun && l.cfg.ServedTransfer != nil {
		l.cfg.ServedTransfer(ctx)
	}
	if req.DryRun || r.URL.Query().Get("checked") == "1" {
		pf, res, err := l.Transfer(ctx, req.Group, req.Target, req.DryRun, false)
		if err != nil {
			peer.WriteError(w, peer.StatusOf(err), err)
			return
		}
		peer.WriteJSON(w, checkedAnswer{pf, res})
		return
	}
	leader, term, err := l.cfg.Host.TransferHere(ctx, req.Group, req.Target)
	if err != nil {
		peer.WriteError(w, peer.StatusOf(err), err)
		return
	}
	peer.WriteJSON(w, slotstore.TransferResult{Group: req.Group, Leader: leader, Term: term})
}
