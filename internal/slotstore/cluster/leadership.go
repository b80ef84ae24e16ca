package cluster

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/controller/policy"
	"slotmeta/internal/slotstore/peer"
)

// Group returns one group's view.
func (n *Node) Group(ctx context.Context, g slotstore.GroupID) (slotstore.GroupView, error) {
	views, err := n.Groups(ctx)
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

// transferInFlight reports whether this node started a transfer of g that
// has neither been seen to finish nor aged past the cooldown.
func (n *Node) transferInFlight(g slotstore.GroupID, now time.Time) bool {
	v, ok := n.transfers.Load(g)
	return ok && now.Sub(v.(time.Time)) < n.cfg.Leadership.TransferCooldown
}

// transferFacts gathers what the transfer checks of moving g's leadership
// to target need besides the group's view, as this node knows it at now.
func (n *Node) transferFacts(g slotstore.GroupID, target slotstore.NodeID, now time.Time) policy.Facts {
	f := policy.Facts{Now: now, InFlight: n.transferInFlight(g, now), Backoff: n.backoff.State(g)}
	f.TargetHealthyFor, f.TargetGap = n.obs.HealthyFor(now, target)
	for _, h := range n.obs.NodeHealth(now, []slotstore.NodeID{target}, n.cfg.NodeID) {
		f.TargetDown = h.Health == slotstore.NodeUnreachable
	}
	return f
}

type transferRequest struct {
	Group  slotstore.GroupID `json:"group"`
	Target slotstore.NodeID  `json:"target"`
	DryRun bool              `json:"dry_run"`
}

// LeaderTransfer moves group g's leadership to target if every safety check
// passes (dryRun: only the checks). The controller leader decides — it holds
// the observations and knows which transfers are in flight — so other nodes
// pass the request to it. A refusal is a conflict whose details are the
// blockers; a preflight is answered whole.
func (n *Node) LeaderTransfer(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID, dryRun bool) (slotstore.Preflight, slotstore.TransferResult, error) {
	return n.leaderTransfer(ctx, g, target, dryRun, true)
}

// leaderTransfer is LeaderTransfer; a request that already came from another
// node is never passed on again (forward false), so two nodes that disagree
// about the controller leader cannot bounce it between them.
func (n *Node) leaderTransfer(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID, dryRun, forward bool) (slotstore.Preflight, slotstore.TransferResult, error) {
	if !n.isControllerLeader() {
		if !forward {
			return slotstore.Preflight{}, slotstore.TransferResult{}, &slotstore.Error{Code: slotstore.CodeNotLeader,
				LeaderHint: slotstore.NodeID(n.ctrlLeader.Load()), Message: "this node does not lead the controller"}
		}
		return n.forwardLeaderTransfer(ctx, transferRequest{Group: g, Target: target, DryRun: dryRun})
	}
	n.refreshObservations(ctx)
	v, err := n.Group(ctx, g)
	if err != nil {
		return slotstore.Preflight{}, slotstore.TransferResult{}, err
	}
	pf := policy.CheckTransfer(v, target, n.cfg.Leadership, n.transferFacts(g, target, n.cfg.Now()))
	if dryRun {
		return pf, slotstore.TransferResult{}, nil
	}
	if !pf.OK {
		return pf, slotstore.TransferResult{}, refusal(pf)
	}
	res, err := n.executeTransfer(ctx, v, target)
	return pf, res, err
}

// refusal turns a failed preflight into a 409 whose details name the blockers.
func refusal(pf slotstore.Preflight) error {
	e := &slotstore.Error{Code: slotstore.CodeConflict, Message: "leader transfer refused: it is not safe now"}
	for _, b := range pf.Blockers {
		e.Details = append(e.Details, slotstore.FieldError{Field: b.Reason, Reason: b.Detail})
	}
	return e
}

// refreshObservations collects fresh reports unless the last round is recent.
func (n *Node) refreshObservations(ctx context.Context) {
	if !n.obs.Fresh(n.cfg.Now(), n.cfg.ObserveInterval) {
		octx, cancel := context.WithTimeout(ctx, time.Second)
		n.ObserveOnce(octx)
		cancel()
	}
}

// executeTransfer asks the group's current leader (this node, or the
// leader's node over peer RPC) to transfer, and waits to observe the new
// leader. The leader's node carries it out because it alone knows, live,
// whether the target answers it (TransferLeader refuses otherwise), and so
// that it knows its leadership was handed away, not lost. A failure puts
// the group into back-off; a success clears it.
func (n *Node) executeTransfer(ctx context.Context, v slotstore.GroupView, target slotstore.NodeID) (res slotstore.TransferResult, err error) {
	start := n.cfg.Now()
	n.transfers.Store(v.ID, start)
	defer n.transfers.Delete(v.ID)
	defer func() {
		if err != nil {
			n.backoff.Failed(v.ID, n.cfg.Now(), n.cfg.Leadership)
		} else {
			n.backoff.Succeeded(v.ID)
		}
	}()
	res = slotstore.TransferResult{Group: v.ID, PreviousLeader: v.Leader}
	if v.Leader == 0 {
		return res, slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no observed leader to transfer from", v.ID)
	}
	if v.Leader == n.cfg.NodeID {
		err = n.TransferLeader(ctx, v.ID, target)
		if err == nil {
			st, _ := n.router.Load().Group(v.ID)
			res.Leader, res.Term = st.Leader, st.Term
		}
	} else {
		addr := n.dispatch.PeerAddrOf(v.Leader)
		if addr == "" {
			return res, slotstore.Errorf(slotstore.CodeRouteNotReady, "the group leader's peer address is unknown")
		}
		body, _ := json.Marshal(transferRequest{Group: v.ID, Target: target})
		var resp *http.Response
		if resp, _, err = n.peers.Call(ctx, http.MethodPost, addr, "transfer", body, nil); err == nil {
			var b []byte
			if b, err = peer.ReadBody(resp); err == nil {
				err = json.Unmarshal(b, &res)
			}
		}
	}
	if err != nil {
		return res, err
	}
	res.ObservedAtMs = n.cfg.Now().UnixMilli()
	res.TookMs = n.cfg.Now().Sub(start).Milliseconds()
	res.PreviousLeader = v.Leader
	return res, nil
}

// servePeerTransfer performs a raw transfer on a node holding a replica.
func (n *Node) servePeerTransfer(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req transferRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		peer.WriteError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "transfer request"))
		return
	}
	if !req.DryRun {
		n.peerWrites.wrote(ctx, peerWriteTransfer)
	}
	if req.DryRun || r.URL.Query().Get("checked") == "1" {
		// The checked variant, decided by the controller leader.
		pf, res, err := n.leaderTransfer(ctx, req.Group, req.Target, req.DryRun, false)
		if err != nil {
			peer.WriteError(w, peer.StatusOf(err), err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Preflight slotstore.Preflight      `json:"preflight"`
			Result    slotstore.TransferResult `json:"result"`
		}{pf, res})
		return
	}
	if err := n.TransferLeader(ctx, req.Group, req.Target); err != nil {
		peer.WriteError(w, peer.StatusOf(err), err)
		return
	}
	st, _ := n.router.Load().Group(req.Group)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(slotstore.TransferResult{Group: req.Group, Leader: st.Leader, Term: st.Term})
}

// forwardLeaderTransfer hands a checked transfer to the controller leader.
func (n *Node) forwardLeaderTransfer(ctx context.Context, req transferRequest) (slotstore.Preflight, slotstore.TransferResult, error) {
	leader := slotstore.NodeID(n.ctrlLeader.Load())
	addr := n.dispatch.PeerAddrOf(leader)
	if leader == 0 || addr == "" {
		return slotstore.Preflight{}, slotstore.TransferResult{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "the controller leader is unknown")
	}
	body, _ := json.Marshal(req)
	resp, _, err := n.peers.Call(ctx, http.MethodPost, addr, "transfer?checked=1", body, nil)
	if err != nil {
		return slotstore.Preflight{}, slotstore.TransferResult{}, err
	}
	b, err := peer.ReadBody(resp)
	if err != nil {
		return slotstore.Preflight{}, slotstore.TransferResult{}, slotstore.Wrap(slotstore.CodeTimeout, err, "reading the controller leader's answer")
	}
	var out struct {
		Preflight slotstore.Preflight      `json:"preflight"`
		Result    slotstore.TransferResult `json:"result"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return slotstore.Preflight{}, slotstore.TransferResult{}, slotstore.Wrap(slotstore.CodeInternal, err, "undecodable transfer answer")
	}
	return out.Preflight, out.Result, nil
}

// SetPreferredLeader records the intent that node should lead group g.
func (n *Node) SetPreferredLeader(ctx context.Context, g slotstore.GroupID, node slotstore.NodeID) error {
	return n.proposeController(ctx, controller.Command{SetPreferred: &controller.SetPreferred{Group: g, Node: node}})
}

// Decisions returns the controller's decision log, newest last.
func (n *Node) Decisions() []slotstore.Decision { return n.ctrl.Load().Decisions }
