package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/engine/digests"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/engine/replicas"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The node's part in state checks (issue 52; package checks): it answers
// the digest its replica of a group computed for a check ("digest"), and
// fences its replica when a check found it in the minority ("fence"). The
// checks themselves are run by the controller leader (leader/check.go).

// fenceRequest asks a node to fence its replica of a group.
type fenceRequest struct {
	Group     slotstore.GroupID `json:"group"`
	ReplicaID uint64            `json:"replica_id"`
	Reason    string            `json:"reason"`
}

// registerChecks puts the check endpoints on the node's peer server.
func (p peerAPI) registerChecks(s *peer.Server) {
	s.Handle(http.MethodGet, "digest", p.servePeerDigest)
	s.Handle(http.MethodPost, "fence", p.servePeerFence)
}

// servePeerDigest answers ?group=G&check=ID with this node's digest,
// waiting (within the caller's deadline) until its replica reached the
// check and hashed its state.
func (p peerAPI) servePeerDigest(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	g, err1 := strconv.ParseUint(r.URL.Query().Get("group"), 10, 32)
	id, err2 := strconv.ParseUint(r.URL.Query().Get("check"), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		peer.WriteError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "digest request"))
		return
	}
	d, err := localDigest(ctx, p.n, slotstore.GroupID(g), id)
	if err != nil {
		peer.WriteError(w, peer.StatusOf(err), err)
		return
	}
	peer.WriteJSON(w, d)
}

// servePeerFence fences this node's replica named in the request.
func (p peerAPI) servePeerFence(_ context.Context, w http.ResponseWriter, r *http.Request) {
	req, _, ok := peer.ReadRequest(w, r.Body, "fence request", func(b []byte) (fenceRequest, error) {
		var req fenceRequest
		return req, json.Unmarshal(b, &req)
	})
	if !ok {
		return
	}
	if err := fenceLocal(p.n, req); err != nil {
		peer.WriteError(w, peer.StatusOf(err), err)
		return
	}
	peer.WriteJSON(w, struct{}{})
}

// localDigest is this node's digest of g for check id.
func localDigest(ctx context.Context, n *Node, g slotstore.GroupID, id uint64) (slotstore.ReplicaDigest, error) {
	d, err := n.digests.Wait(ctx, g, id)
	switch {
	case errors.Is(err, digests.ErrBusy):
		return d, slotstore.Wrap(slotstore.CodeBusy, err, "state check")
	case errors.Is(err, digests.ErrStale):
		return d, slotstore.Wrap(slotstore.CodeFailedPrecondition, err, "state check")
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return d, slotstore.Wrap(slotstore.CodeTimeout, err, "state check")
	case err != nil:
		return d, slotstore.Wrap(slotstore.CodeInternal, err, "state check")
	}
	return d, nil
}

func fenceLocal(n *Node, req fenceRequest) error {
	err := n.replicas.Fence(req.Group, req.ReplicaID, req.Reason)
	if errors.Is(err, replicas.ErrNotFenced) {
		return slotstore.Wrap(slotstore.CodeNotFound, err, "fence")
	}
	if err != nil {
		return slotstore.Wrap(slotstore.CodeInternal, err, "fence")
	}
	return nil
}

// ReplicaDigest is node's digest of g for check id (leader.Host).
func (h leaderHost) ReplicaDigest(ctx context.Context, node slotstore.NodeID, g slotstore.GroupID, id uint64) (slotstore.ReplicaDigest, error) {
	if node == h.n.cfg.NodeID {
		return localDigest(ctx, h.n, g, id)
	}
	addr := h.n.dispatch.PeerAddrOf(node)
	if addr == "" {
		return slotstore.ReplicaDigest{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "node %d's peer address is unknown", node)
	}
	q := url.Values{"group": {strconv.FormatUint(uint64(g), 10)}, "check": {strconv.FormatUint(id, 10)}}
	return peer.CallJSON[slotstore.ReplicaDigest](ctx, h.n.peers, http.MethodGet, addr, "digest?"+q.Encode(), nil, fmt.Sprintf("node %d's digest", node))
}

// FenceReplica fences node's replica of g (leader.Host).
func (h leaderHost) FenceReplica(ctx context.Context, node slotstore.NodeID, g slotstore.GroupID, replica uint64, reason string) error {
	req := fenceRequest{Group: g, ReplicaID: replica, Reason: reason}
	if node == h.n.cfg.NodeID {
		return fenceLocal(h.n, req)
	}
	addr := h.n.dispatch.PeerAddrOf(node)
	if addr == "" {
		return slotstore.Errorf(slotstore.CodeRouteNotReady, "node %d's peer address is unknown", node)
	}
	body, _ := json.Marshal(req)
	_, err := peer.CallJSON[struct{}](ctx, h.n.peers, http.MethodPost, addr, "fence", body, fmt.Sprintf("node %d's fence", node))
	return err
}

// CheckGroup checks g's replicas now (on the controller leader; part of
// slotstore.Recovery, the operator's repair of groups).
func (r *recoverer) CheckGroup(ctx context.Context, g slotstore.GroupID) (slotstore.GroupCheck, error) {
	return r.n.leader.CheckGroup(ctx, g)
}
