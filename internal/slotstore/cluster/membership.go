package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"

	"github.com/lni/dragonboat/v4"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
)

// Membership operations on a group's Raft. They run on a node that holds a
// replica of the group (this one, else the leader or another desired peer
// over peer RPC). Each is idempotent: an operation whose effect is already
// in the membership does nothing, so a task step can always be retried.
const (
	opGet        = "get"
	opAddLearner = "add_learner"
	opPromote    = "promote"
	opRemove     = "remove"
)

type membershipRequest struct {
	Group     slotstore.GroupID `json:"group"`
	Op        string            `json:"op"`
	ReplicaID uint64            `json:"replica_id,omitempty"`
	Addr      string            `json:"addr,omitempty"`
}

type membershipView struct {
	Voters         map[uint64]string `json:"voters"`
	Learners       map[uint64]string `json:"learners"`
	ConfigChangeID uint64            `json:"config_change_id"`
}

func (m membershipView) record(phase, note string) *slotstore.PhaseRecord {
	r := &slotstore.PhaseRecord{Phase: phase, ConfigChangeID: m.ConfigChangeID, Note: note,
		Voters: []uint64{}, Learners: []uint64{}}
	for id := range m.Voters {
		r.Voters = append(r.Voters, id)
	}
	for id := range m.Learners {
		r.Learners = append(r.Learners, id)
	}
	sort.Slice(r.Voters, func(i, j int) bool { return r.Voters[i] < r.Voters[j] })
	sort.Slice(r.Learners, func(i, j int) bool { return r.Learners[i] < r.Learners[j] })
	return r
}

// membership performs req where a replica of the group lives.
func (n *Node) membership(ctx context.Context, req membershipRequest) (membershipView, error) {
	if lg := (*n.groups.Load())[req.Group]; lg != nil && lg.sm.Load() != nil {
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
	body, _ := json.Marshal(req)
	var err error = slotstore.Errorf(slotstore.CodeRouteNotReady, "no node holding group %d answered", req.Group)
	for _, id := range candidates {
		addr := n.peerAddrOf(id)
		if id == n.cfg.NodeID || addr == "" {
			continue
		}
		var resp *http.Response
		resp, _, err = n.peers.call(ctx, http.MethodPost, addr, "membership", body, nil)
		if err != nil {
			continue
		}
		b, rerr := readBody(resp)
		var m membershipView
		if rerr == nil && json.Unmarshal(b, &m) == nil {
			return m, nil
		}
		err = slotstore.Errorf(slotstore.CodeInternal, "undecodable membership from node %d", id)
	}
	return membershipView{}, err
}

func (n *Node) localMembership(ctx context.Context, req membershipRequest) (membershipView, error) {
	shard := controller.ShardOf(req.Group)
	read := func() (membershipView, *dragonboat.Membership, error) {
		m, err := n.nh.SyncGetShardMembership(ctx, shard)
		if err != nil {
			return membershipView{}, nil, raftError(err, req.Group, false)
		}
		return membershipView{Voters: m.Nodes, Learners: m.NonVotings, ConfigChangeID: m.ConfigChangeID}, m, nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		v, m, err := read()
		if err != nil {
			return v, err
		}
		_, voter := m.Nodes[req.ReplicaID]
		_, learner := m.NonVotings[req.ReplicaID]
		if _, removed := m.Removed[req.ReplicaID]; removed && req.Op != opRemove && req.Op != opGet {
			return v, slotstore.Errorf(slotstore.CodeConflict, "replica %d was removed from group %d; ids are never reused", req.ReplicaID, req.Group)
		}
		switch {
		case req.Op == opGet,
			req.Op == opAddLearner && (voter || learner),
			req.Op == opPromote && voter,
			req.Op == opRemove && !voter && !learner:
			return v, nil
		case req.Op == opAddLearner:
			err = n.nh.SyncRequestAddNonVoting(ctx, shard, req.ReplicaID, req.Addr, m.ConfigChangeID)
		case req.Op == opPromote:
			if !learner {
				return v, slotstore.Errorf(slotstore.CodeConflict, "replica %d is not a learner of group %d", req.ReplicaID, req.Group)
			}
			err = n.nh.SyncRequestAddReplica(ctx, shard, req.ReplicaID, req.Addr, m.ConfigChangeID)
		case req.Op == opRemove:
			err = n.nh.SyncRequestDeleteReplica(ctx, shard, req.ReplicaID, m.ConfigChangeID)
		default:
			return v, slotstore.Errorf(slotstore.CodeInvalidArgument, "unknown membership op %q", req.Op)
		}
		if err == nil {
			v, _, err = read()
			return v, err
		}
		if !errors.Is(err, dragonboat.ErrRejected) {
			return v, raftError(err, req.Group, true)
		}
		// A stale config change id: someone changed the membership; re-read.
	}
	return membershipView{}, slotstore.Errorf(slotstore.CodeBusy, "membership of group %d kept changing", req.Group)
}

func (n *Node) servePeerMembership(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req membershipRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		writePeerError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "membership request"))
		return
	}
	if lg := (*n.groups.Load())[req.Group]; lg == nil || lg.sm.Load() == nil {
		writePeerError(w, http.StatusServiceUnavailable, slotstore.Errorf(slotstore.CodeNotLeader, "no replica of group %d here", req.Group))
		return
	}
	m, err := n.localMembership(ctx, req)
	if err != nil {
		writePeerError(w, statusOfPeer(err), err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}
