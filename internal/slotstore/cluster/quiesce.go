package cluster

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/peer"
)

// Waking quiesced groups (Config.Quiesce).
//
// dragonboat quiesces a group that had no traffic for ten election
// timeouts: no heartbeats, and its followers stop counting towards an
// election. That is what makes idle groups cheap (bench/README.md, "Many
// groups"), and it is safe — Raft's safety does not depend on timing — but a
// quiesced follower never notices that its leader's node died, so the group
// would stay leaderless until something touches it. Anything that touches a
// replica wakes it: a proposal, a ReadIndex, any Raft message but a
// heartbeat. So a node wakes a group
//
//   - when a write or read for it finds no reachable leader (dispatch's Wake
//     hook: the forward failed, timed out or no leader is known), and
//   - on the controller leader, when a node becomes unreachable, for every
//     group it led —
//
// by a ReadIndex on its own replica (if it has one) and by asking the
// group's other desired peers to do the same (peer RPC "wake"). Woken
// followers time out as usual and elect a leader among the reachable
// replicas.
//
// Concurrency: Wake never blocks; requests go through a bounded queue to one
// worker goroutine owned by the node (it ends with the node). A request for
// a group woken in the last wakeEvery, or one that finds the queue full, is
// dropped and counted: waking is a hint, asked again by the next failure.

const (
	wakeEvery    = 500 * time.Millisecond // one wake per group at most this often
	wakeQueueCap = 256
	wakeTimeout  = time.Second // each ReadIndex and each peer request
)

type waker struct {
	q       chan wakeReq
	mu      sync.Mutex
	last    map[slotstore.GroupID]time.Time
	dropped atomic.Uint64
	sent    atomic.Uint64
}

type wakeReq struct {
	g         slotstore.GroupID
	localOnly bool // asked by a peer: wake this node's replica, ask nobody
}

func newWaker() *waker {
	return &waker{q: make(chan wakeReq, wakeQueueCap), last: map[slotstore.GroupID]time.Time{}}
}

// Wake asks that group g's replicas leave quiesce (a no-op unless
// Config.Quiesce). Safe from any goroutine; never blocks.
func (n *Node) Wake(g slotstore.GroupID) { n.enqueueWake(wakeReq{g: g}) }

func (n *Node) enqueueWake(r wakeReq) {
	if !n.cfg.Quiesce || r.g == 0 {
		return
	}
	w := n.wakes
	now := time.Now()
	w.mu.Lock()
	if !r.localOnly {
		if at, ok := w.last[r.g]; ok && now.Sub(at) < wakeEvery {
			w.mu.Unlock()
			return
		}
		w.last[r.g] = now
		if len(w.last) > 4*wakeQueueCap { // bounded: forget the old entries
			for id, at := range w.last {
				if now.Sub(at) >= wakeEvery {
					delete(w.last, id)
				}
			}
		}
	}
	w.mu.Unlock()
	select {
	case w.q <- r:
	default:
		w.dropped.Add(1)
	}
}

// wakeLoop is the waker's worker, owned by the node.
func (n *Node) wakeLoop() {
	defer n.bg.Done()
	for {
		select {
		case <-n.stop:
			return
		case r := <-n.wakes.q:
			n.wakeLocal(r.g)
			if !r.localOnly {
				n.wakePeers(r.g)
			}
		}
	}
}

// wakeLocal touches this node's replica of g with a ReadIndex (its answer
// does not matter: asking is the activity that ends the quiesce).
func (n *Node) wakeLocal(g slotstore.GroupID) {
	if lg := n.replicas.Get(g); lg == nil || !lg.Open() {
		return
	}
	rs, err := n.nh.ReadIndex(controller.ShardOf(g), wakeTimeout)
	if err != nil {
		return
	}
	n.wakes.sent.Add(1)
	select {
	case <-rs.ResultC():
	case <-n.stop:
	}
	rs.Release()
}

// wakePeers asks g's other desired peers to wake their replicas.
func (n *Node) wakePeers(g slotstore.GroupID) {
	grp, ok := n.ctrl.Load().Groups[g]
	if !ok {
		return
	}
	body, _ := json.Marshal(wakeBody{Group: g})
	var wg sync.WaitGroup
	for _, id := range grp.PeerNodes() {
		addr := n.dispatch.PeerAddrOf(id)
		if id == n.cfg.NodeID || addr == "" {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(n.life, wakeTimeout)
			defer cancel()
			if resp, _, err := n.peers.Call(ctx, http.MethodPost, addr, "wake", body, nil); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}

type wakeBody struct {
	Group slotstore.GroupID `json:"group"`
}

func (n *Node) servePeerWake(_ context.Context, w http.ResponseWriter, r *http.Request) {
	var b wakeBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1024)).Decode(&b); err != nil || b.Group == 0 {
		peer.WriteError(w, http.StatusBadRequest, slotstore.Errorf(slotstore.CodeInvalidArgument, "wake wants a group"))
		return
	}
	n.enqueueWake(wakeReq{g: b.Group, localOnly: true})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}\n"))
}

// wakeLedBy, on the controller leader, wakes every group whose observed
// leader is on one of the unreachable nodes.
func (n *Node) wakeLedBy(unreachable map[slotstore.NodeID]bool, views []slotstore.GroupView) {
	if !n.cfg.Quiesce || len(unreachable) == 0 {
		return
	}
	for _, v := range views {
		if unreachable[v.Leader] {
			n.Wake(v.ID)
		}
	}
}
