package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/leader"
	"github.com/slotmeta/slotmeta/internal/engine/controller/tasks"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// host is one simulated node as its controller leader sees it (leader.Host
// and leader.Peers): the controller state is the run's, the rest the
// world's. Every call takes the world's lock.
type host struct {
	r  *Run
	id slotstore.NodeID
}

var (
	_ leader.Host  = host{}
	_ leader.Peers = host{}
)

func (h host) Controller() *controller.State { return h.r.state() }

func (h host) ControllerLeader() slotstore.NodeID {
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	return h.r.w.ctrlLeader
}

func (h host) Propose(_ context.Context, c controller.Command) (controller.Result, error) {
	return h.r.propose(c)
}

func (h host) Status(context.Context) slotstore.NodeStatus {
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	return h.r.w.status(h.id)
}

func (h host) PeerAddr(id slotstore.NodeID) string { return addrOf(id) }

func (h host) TransferHere(_ context.Context, g slotstore.GroupID, target slotstore.NodeID) (slotstore.NodeID, uint64, error) {
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	return h.r.w.transfer(h.id, g, target)
}

func (h host) Wake([]slotstore.GroupID, slotstore.NodeID) {} // no group quiesces here
func (h host) WakeOn(slotstore.GroupID, slotstore.NodeID) {}

func (h host) ControllerMembers(context.Context) (voters, nonVoting []slotstore.NodeID, err error) {
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	voters = slices.Clone(h.r.w.ctrlVoters)
	for _, id := range slices.Sorted(maps.Keys(h.r.w.nodes)) {
		if !slices.Contains(voters, id) {
			nonVoting = append(nonVoting, id)
		}
	}
	return voters, nonVoting, nil
}

// SyncController: the simulated controller applies a command as it
// commits it.
func (h host) SyncController(context.Context) error { return nil }

func (h host) PromoteController(_ context.Context, id slotstore.NodeID) error {
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	if !slices.Contains(h.r.w.ctrlVoters, id) {
		h.r.w.ctrlVoters = append(h.r.w.ctrlVoters, id)
	}
	return nil
}

func (h host) Membership(_ context.Context, req tasks.MembershipRequest) (tasks.Membership, error) {
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	return h.r.w.membership(req)
}

func (h host) GroupLeader(g slotstore.GroupID) slotstore.NodeID {
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	return h.r.w.leaderNode(h.r.w.groups[g])
}

func (h host) ProposeToGroup(_ context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error) {
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	return h.r.w.slotCommand(g, cmd)
}

func (h host) Read(_ context.Context, q meta.Query, _ meta.Consistency) (any, meta.ReadInfo, error) {
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	return h.r.w.slotRead(q)
}

// Call answers the peer requests the controller leader makes: a node's
// status, and a raw leader transfer on the group leader's node. A node
// that is down answers nothing.
func (h host) Call(_ context.Context, _, addr, path string, body []byte, _ map[string]string) (*http.Response, bool, error) {
	var id slotstore.NodeID
	if _, err := fmt.Sscanf(addr, "sim-n%d", &id); err != nil {
		return nil, false, fmt.Errorf("sim: no node at %q", addr)
	}
	h.r.w.mu.Lock()
	defer h.r.w.mu.Unlock()
	n := h.r.w.nodes[id]
	if n == nil || !n.up {
		return nil, false, slotstore.Errorf(slotstore.CodeRouteNotReady, "peer %s unreachable: node down", addr)
	}
	var answer any
	switch {
	case path == "status":
		answer = h.r.w.status(id)
	case strings.HasPrefix(path, "transfer"):
		var req struct {
			Group  slotstore.GroupID `json:"group"`
			Target slotstore.NodeID  `json:"target"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, true, err
		}
		leaderNode, term, err := h.r.w.transfer(id, req.Group, req.Target)
		if err != nil {
			return nil, true, err
		}
		answer = slotstore.TransferResult{Group: req.Group, Leader: leaderNode, Term: term}
	default:
		return nil, true, slotstore.Errorf(slotstore.CodeNotFound, "sim: no peer endpoint %q", path)
	}
	b, _ := json.Marshal(answer)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(b)), Header: http.Header{}}, true, nil
}

// transfer moves g's leadership from the leader on node from to node
// target's replica, when target runs an up voter.
func (w *world) transfer(from slotstore.NodeID, gid slotstore.GroupID, target slotstore.NodeID) (slotstore.NodeID, uint64, error) {
	g := w.groups[gid]
	if g == nil || w.leaderNode(g) != from {
		return 0, 0, slotstore.Errorf(slotstore.CodeNotLeader, "node %d does not lead group %d", from, gid)
	}
	for _, r := range w.upVoters(g) {
		if g.voters[r] == target {
			g.leader, g.term = r, g.term+1
			return target, g.term, nil
		}
	}
	return 0, 0, slotstore.Errorf(slotstore.CodeConflict, "node %d runs no live voter of group %d", target, gid)
}

// membership performs a membership operation as localMembership does on a
// real node: idempotent, a change only through a live leader.
func (w *world) membership(req tasks.MembershipRequest) (tasks.Membership, error) {
	g := w.groups[req.Group]
	if g == nil {
		return tasks.Membership{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "no node holds group %d", req.Group)
	}
	view := func() tasks.Membership {
		m := tasks.Membership{Voters: map[uint64]string{}, Learners: map[uint64]string{}, ConfigChangeID: g.ccid}
		for r, n := range g.voters {
			m.Voters[r] = addrOf(n)
		}
		for r, n := range g.learners {
			m.Learners[r] = addrOf(n)
		}
		return m
	}
	_, voter := g.voters[req.ReplicaID]
	_, learner := g.learners[req.ReplicaID]
	switch {
	case req.Op == tasks.OpGet,
		req.Op == tasks.OpAddLearner && (voter || learner),
		req.Op == tasks.OpPromote && voter,
		req.Op == tasks.OpRemove && !voter && !learner:
		return view(), nil
	}
	if w.leaderNode(g) == 0 {
		return tasks.Membership{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", req.Group)
	}
	var node slotstore.NodeID
	if _, err := fmt.Sscanf(req.Addr, "sim-n%d", &node); err != nil && req.Op != tasks.OpRemove {
		return tasks.Membership{}, slotstore.Errorf(slotstore.CodeInvalidArgument, "sim: address %q", req.Addr)
	}
	switch req.Op {
	case tasks.OpAddLearner:
		g.learners[req.ReplicaID] = node
	case tasks.OpPromote:
		if !learner {
			return tasks.Membership{}, slotstore.Errorf(slotstore.CodeConflict, "replica %d is not a learner of group %d", req.ReplicaID, req.Group)
		}
		delete(g.learners, req.ReplicaID)
		g.voters[req.ReplicaID] = node
	case tasks.OpRemove:
		delete(g.voters, req.ReplicaID)
		delete(g.learners, req.ReplicaID)
		if g.leader == req.ReplicaID {
			g.leader, g.lostAt = 0, w.now
		}
	default:
		return tasks.Membership{}, slotstore.Errorf(slotstore.CodeInvalidArgument, "unknown membership op %q", req.Op)
	}
	g.ccid++
	return view(), nil
}

// slotCommand applies a slot command to group g's state machine, as the
// real FSM does the ownership part of it (package fsm, slotmigration.go):
// rows are not modelled.
func (w *world) slotCommand(gid slotstore.GroupID, cmd meta.Command) (meta.Result, error) {
	g := w.groups[gid]
	if w.leaderNode(g) == 0 {
		return meta.Result{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", gid)
	}
	sc, ok := cmd.(meta.SlotCommand)
	if !ok {
		return meta.Result{}, slotstore.Errorf(slotstore.CodeInvalidArgument, "sim: %T is no slot command", cmd)
	}
	hs := sc.Head().HashSlot
	refuse := func(why string) (meta.Result, error) {
		return meta.Result{Code: slotstore.CodeConflict, Message: fmt.Sprintf("group %d, hash slot %d: %s", gid, hs, why)}, nil
	}
	owns := w.owner[hs] == gid
	switch cmd.(type) {
	case *meta.FenceSlot:
		if !owns {
			return refuse("cannot fence a slot the group does not own")
		}
		g.fenced[hs] = true
	case *meta.UnfenceSlot:
		delete(g.fenced, hs)
	case *meta.TrackSlot:
		if !owns {
			return refuse("cannot track a slot the group does not own")
		}
	case *meta.ImportRows, *meta.ImportChanges, *meta.DropImported:
		if owns {
			return refuse("the group owns the slot")
		}
	case *meta.AcquireSlot:
		w.owner[hs] = gid
	case *meta.ReleaseSlot:
		if owns && !g.fenced[hs] {
			return refuse("cannot release a slot that is not fenced")
		}
		delete(g.fenced, hs)
	}
	g.index++
	return meta.Result{Revision: g.index}, nil
}

// chunkBytes is what one exported chunk of a slot stands for (the
// executor's chunks are up to 256 KiB).
const chunkBytes = 256 << 10

// slotRead answers a slot move's exports from the group owning the slot:
// the slot's bytes as chunks of one stand-in row each ("c00000001", …), at
// most SnapshotRate a step and a slot (a copy takes time proportional to
// the slot's data: the executor's step stops at the refusal and goes on
// from its position next round), and no logged changes.
func (w *world) slotRead(q meta.Query) (any, meta.ReadInfo, error) {
	switch q := q.(type) {
	case *meta.ExportSlot:
		g := w.groups[w.owner[q.HashSlot]]
		if w.leaderNode(g) == 0 {
			return nil, meta.ReadInfo{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "hash slot %d has no live leader", q.HashSlot)
		}
		total := int((w.slotBytes[q.HashSlot] + chunkBytes - 1) / chunkBytes)
		next := 1
		if len(q.After) > 0 {
			if _, err := fmt.Sscanf(string(q.After), "c%d", &next); err != nil {
				return nil, meta.ReadInfo{}, slotstore.Errorf(slotstore.CodeInvalidArgument, "sim: row key %q", q.After)
			}
			next++
		}
		if next > total {
			return &meta.SlotChunk{Done: true, Revision: g.index}, meta.ReadInfo{}, nil
		}
		if w.exported[q.HashSlot] >= max(1, int(w.params.SnapshotRate*int64(w.params.Step/time.Millisecond)/1000/chunkBytes)) {
			return nil, meta.ReadInfo{}, slotstore.Errorf(slotstore.CodeBusy, "sim: hash slot %d exported what a step can", q.HashSlot)
		}
		w.exported[q.HashSlot]++
		row := meta.Row{Key: []byte(fmt.Sprintf("c%08d", next)), Value: []byte{0}}
		return &meta.SlotChunk{Rows: []meta.Row{row}, Done: next == total, Revision: g.index}, meta.ReadInfo{}, nil
	case *meta.ExportChanges:
		if w.leaderNode(w.groups[w.owner[q.HashSlot]]) == 0 {
			return nil, meta.ReadInfo{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "hash slot %d has no live leader", q.HashSlot)
		}
		return &meta.ChangeChunk{Done: true, NextIndex: q.AfterIndex, NextSeq: q.AfterSeq}, meta.ReadInfo{}, nil
	}
	return nil, meta.ReadInfo{}, slotstore.Errorf(slotstore.CodeInvalidArgument, "sim: query %T is not modelled", q)
}
