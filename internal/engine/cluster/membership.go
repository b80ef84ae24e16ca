package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/tasks"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// membership performs req where a replica of the group lives.
func (n *Node) membership(ctx context.Context, req tasks.MembershipRequest) (tasks.Membership, error) {
	if lg := n.replicas.All()[req.Group]; lg != nil && lg.SM() != nil {
		m, err := n.localMembership(ctx, req)
		// A replica just removed from the group (this node's, by this very
		// step) is gone from dragonboat: ask a node that still holds one.
		if err == nil || slotstore.ErrorCode(err) != slotstore.CodeRouteNotReady {
			return m, err
		}
	}
	var candidates []slotstore.NodeID
	if st, ok := n.router.Load().Group(req.Group); ok && st.Leader != 0 {
		candidates = append(candidates, st.Leader)
	}
	if grp, ok := n.ctrl.Load().Groups[req.Group]; ok {
		candidates = append(candidates, grp.PeerNodes()...)
	}
	seen := map[slotstore.NodeID]bool{n.cfg.NodeID: true}
	candidates = slices.DeleteFunc(candidates, func(id slotstore.NodeID) bool {
		skip := seen[id] || n.dispatch.PeerAddrOf(id) == ""
		seen[id] = true
		return skip
	})
	body, _ := json.Marshal(req)
	var err error = slotstore.Errorf(slotstore.CodeRouteNotReady, "no node holding group %d answered", req.Group)
	for i, id := range candidates {
		// Each candidate gets its share of what is left: a cut link hangs
		// until the deadline, and the leader the router names first may be
		// the one cut off (chaos: every step of a move's remove_old spent
		// its whole deadline on the isolated new leader).
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok && i < len(candidates)-1 {
			cctx, cancel = context.WithTimeout(ctx, time.Until(dl)/time.Duration(len(candidates)-i))
		}
		var resp *http.Response
		resp, _, err = n.peers.Call(cctx, http.MethodPost, n.dispatch.PeerAddrOf(id), "membership", body, nil)
		if err != nil {
			cancel()
			continue
		}
		b, rerr := peer.ReadBody(resp)
		cancel()
		var m tasks.Membership
		if rerr == nil && json.Unmarshal(b, &m) == nil {
			return m, nil
		}
		err = slotstore.Errorf(slotstore.CodeInternal, "undecodable membership from node %d", id)
	}
	return tasks.Membership{}, err
}

func (n *Node) localMembership(ctx context.Context, req tasks.MembershipRequest) (tasks.Membership, error) {
	shard := controller.ShardOf(req.Group)
	read := func() (tasks.Membership, *dragonboat.Membership, error) {
		m, err := n.nh.SyncGetShardMembership(ctx, shard)
		if err != nil {
			return tasks.Membership{}, nil, propose.RaftError(err, req.Group, false)
		}
		return tasks.Membership{Voters: m.Nodes, Learners: m.NonVotings, ConfigChangeID: m.ConfigChangeID}, m, nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		v, m, err := read()
		if err != nil {
			return v, err
		}
		_, voter := m.Nodes[req.ReplicaID]
		_, learner := m.NonVotings[req.ReplicaID]
		if _, removed := m.Removed[req.ReplicaID]; removed && req.Op != tasks.OpRemove && req.Op != tasks.OpGet {
			return v, slotstore.Errorf(slotstore.CodeConflict, "replica %d was removed from group %d; ids are never reused", req.ReplicaID, req.Group)
		}
		switch {
		case req.Op == tasks.OpGet,
			req.Op == tasks.OpAddLearner && (voter || learner),
			req.Op == tasks.OpPromote && voter,
			req.Op == tasks.OpRemove && !voter && !learner:
			return v, nil
		case req.Op == tasks.OpAddLearner:
			err = n.nh.SyncRequestAddNonVoting(ctx, shard, req.ReplicaID, req.Addr, m.ConfigChangeID)
		case req.Op == tasks.OpPromote:
			if !learner {
				return v, slotstore.Errorf(slotstore.CodeConflict, "replica %d is not a learner of group %d", req.ReplicaID, req.Group)
			}
			err = n.nh.SyncRequestAddReplica(ctx, shard, req.ReplicaID, req.Addr, m.ConfigChangeID)
		case req.Op == tasks.OpRemove:
			err = n.nh.SyncRequestDeleteReplica(ctx, shard, req.ReplicaID, m.ConfigChangeID)
		default:
			return v, slotstore.Errorf(slotstore.CodeInvalidArgument, "unknown membership op %q", req.Op)
		}
		if err == nil {
			v, _, err = read()
			return v, err
		}
		if !errors.Is(err, dragonboat.ErrRejected) {
			return v, propose.RaftError(err, req.Group, true)
		}
		// A stale config change id: someone changed the membership; re-read.
	}
	return tasks.Membership{}, slotstore.Errorf(slotstore.CodeBusy, "membership of group %d kept changing", req.Group)
}

func (p peerAPI) servePeerMembership(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req tasks.MembershipRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		peer.WriteError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "membership request"))
		return
	}
	if lg := p.n.replicas.All()[req.Group]; lg == nil || lg.SM() == nil {
		peer.WriteError(w, http.StatusServiceUnavailable, slotstore.Errorf(slotstore.CodeNotLeader, "no replica of group %d here", req.Group))
		return
	}
	p.n.peerWrites.wrote(ctx, peerWriteMembership)
	m, err := p.n.localMembership(ctx, req)
	if err != nil {
		peer.WriteError(w, peer.StatusOf(err), err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}
