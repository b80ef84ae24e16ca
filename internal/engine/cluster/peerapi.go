package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The node's peer RPC endpoints (the wire is package peer's): a forwarded
// request is served locally or refused with a hint — never forwarded again
// (at most one hop).

// peerAPI is the node's side of peer RPC: the server and the endpoints
// the node itself answers (dispatch, the controller leader and the waker
// register theirs).
type peerAPI struct{ n *Node }

// peerHandler is the node's peer RPC: the endpoints of package peer's
// server, each served by the node.
func (p peerAPI) peerHandler() *peer.Server {
	s := peer.NewServer(p.n.secret, 4*p.n.cfg.MaxPeerInFlight)
	s.RefuseFrom(p.n.isRemoved)
	s.OnAuthFailure(p.n.metrics.PeerAuthFailed)
	p.n.dispatch.Register(s) // propose, propose-batch, read
	p.n.leader.Register(s)   // groups, health, balancer, balancer-plan, transfer
	p.n.backups.Register(s)  // backup-image
	p.n.recovery.register(s) // recover-prepare, recover-status
	p.n.history.Register(s)  // history
	s.Handle(http.MethodPost, "readindex", p.servePeerReadIndex)
	s.Handle(http.MethodGet, "leaders", p.servePeerLeaders)
	s.Handle(http.MethodGet, "applied", p.servePeerApplied)
	s.Handle(http.MethodGet, "status", p.servePeerStatus)
	s.Handle(http.MethodGet, "nodes", p.servePeerNodes)
	s.Handle(http.MethodPost, "wake", p.n.wakes.Serve)
	s.Handle(http.MethodPost, "membership", p.servePeerMembership)
	p.registerChecks(s) // digest, fence

	return s
}

// localLeaderViews reads the live leader of every local replica.
func (p peerAPI) localLeaderViews() []peer.LeaderView {
	st := p.n.ctrl.Load()
	var out []peer.LeaderView
	for id := range p.n.replicas.All() {
		leader, term, valid, err := p.n.nh.GetLeaderID(controller.ShardOf(id))
		if err != nil || !valid || leader == 0 {
			continue
		}
		if node, ok := st.NodeOfReplica(id, leader); ok {
			out = append(out, peer.LeaderView{Group: id, Leader: node, Term: term})
		}
	}
	return out
}

// servePeerApplied answers the applied index of this node's replica of
// the group named by ?group= (a leader transfer waits for its target).
func (p peerAPI) servePeerApplied(_ context.Context, w http.ResponseWriter, r *http.Request) {
	g, err := strconv.ParseUint(r.URL.Query().Get("group"), 10, 32)
	lg := p.n.replicas.All()[slotstore.GroupID(g)]
	if err != nil || lg == nil || lg.SM() == nil {
		peer.WriteError(w, http.StatusNotFound, slotstore.Errorf(slotstore.CodeNotFound, "no replica of group %q here", r.URL.Query().Get("group")))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(strconv.AppendUint(nil, lg.SM().AppliedIndex(), 10))
}

func (p peerAPI) servePeerLeaders(_ context.Context, w http.ResponseWriter, _ *http.Request) {
	peer.WriteJSON(w, p.localLeaderViews())
}

// servePeerReadIndex answers a follower's read-index questions for the
// groups this node leads (peer/readindex.go): per group the index plus one,
// or 0.
func (p peerAPI) servePeerReadIndex(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	groups, _, ok := peer.ReadRequest(w, io.LimitReader(r.Body, 64<<10), "read-index request", peer.DecodeReadIndexGroups)
	if !ok {
		return
	}
	// Each group's round gets half of what the asker allows: a slow group
	// (no quorum, a transfer under way) is refused in time for the asker
	// to fall back, instead of holding the answers of every other group.
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(d)/2)
		defer cancel()
	}
	answers := make([]uint64, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		lg := p.n.replicas.Get(g)
		if lg == nil {
			continue
		}
		if leader, _, valid, err := p.n.nh.GetLeaderID(controller.ShardOf(g)); err != nil || !valid || leader != lg.ReplicaID {
			continue // not the leader: the follower runs its own round
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A round of the leader's own (shared with its local reads:
			// under its lease no message leaves the node, else a ReadIndex
			// round that renews the lease) that starts after the question
			// arrived: then everything committed before it is applied here.
			if err := lg.Reads.Wait(ctx); err == nil {
				if m := lg.SM(); m != nil {
					answers[i] = m.AppliedIndex() + 1
				}
			}
		}()
	}
	wg.Wait()
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(peer.AppendReadIndexAnswers(nil, answers))
}

// remoteReadIndex is how a follower's read asks the leader's node for its
// read index (nil when this node serves no leases: the cluster is taken to
// run them alike).
func (n *Node) remoteReadIndex(on bool) func(ctx context.Context, g slotstore.GroupID, node slotstore.NodeID) (uint64, error) {
	if !on {
		return nil
	}
	return func(ctx context.Context, g slotstore.GroupID, node slotstore.NodeID) (uint64, error) {
		addr := n.dispatch.PeerAddrOf(node)
		if addr == "" {
			return 0, fmt.Errorf("node %d has no peer address", node)
		}
		return n.peers.ReadIndex(ctx, addr, g)
	}
}
