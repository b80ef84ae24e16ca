// Package waker wakes quiesced Raft groups: this node's replicas, and
// through the peer port its peers' replicas of them.
//
// dragonboat quiesces a group that had no traffic for ten election
// timeouts: no heartbeats, and its followers never campaign (they still
// count election ticks). That is what makes idle groups cheap
// (bench/README.md, "Many groups"), and it is safe — Raft's safety does not
// depend on timing — but a quiesced follower never notices that its
// leader's node died, so the group would stay leaderless until something
// touches it. Anything that touches a replica wakes it: a proposal, a
// ReadIndex, any Raft message but a heartbeat; having counted its ticks, a
// woken follower campaigns at its next tick unless the leader's answer
// reached it first (so a wake of a healthy group may cost a term change).
// So a node wakes a group
//
//   - when a write or read for it finds no reachable leader (Unreached,
//     dispatch's Wake hook: the forward failed, timed out or no leader is
//     known) — with every other group that leader's node leads —, and
//   - on the controller leader, when a node becomes unreachable, for every
//     group it led, and
//   - on a node whose controller replica knows no leader (a lost quorum,
//     or the node cut off), its own replicas that lead their group, on
//     this node alone, once a reconcile round: a quiesced leader checks its
//     quorum only while it ticks, and steps down once woken if its
//     followers are gone —
//
// by a ReadIndex on its own replica (if it has one) and by asking the
// group's other desired peers to do the same (peer RPC "wake", one request
// per peer for all its groups). The woken followers elect a leader among
// the reachable replicas.
//
// Concurrency: Wake, Unreached, WakeAll and WakeOn never block; batches go through a bounded queue to one
// worker goroutine owned by the node (it ends with the node), which waits
// for no ReadIndex and for its peer requests at most Timeout. A group
// woken in the last wakeEvery is left out; a batch that finds the queue
// full is dropped and counted: waking is a hint, asked again by the next
// failure.
package waker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

const (
	wakeEvery    = 500 * time.Millisecond // one wake per group at most this often
	wakeQueueCap = 256
	// Timeout bounds each ReadIndex and each peer request.
	Timeout      = time.Second
	maxWakeBatch = 1024 // groups in one peer "wake" request
)

// Config is what a Waker needs from its node.
type Config struct {
	// Off: nothing is quiesced (the node's DisableQuiesce), nothing to wake.
	Off  bool
	Self slotstore.NodeID
	// Life ends with the node: the peer requests in flight end with it.
	Life       context.Context
	Router     *routing.Router
	Controller func() *controller.State
	// Touch is a ReadIndex on this node's open replica of g, not waited for.
	Touch func(g slotstore.GroupID)
	// Addr is a node's peer address ("": unknown).
	Addr  func(slotstore.NodeID) string
	Peers *peer.Client
}

// Waker wakes quiesced groups. It owns the wake queue and its worker (Run).
type Waker struct {
	cfg Config

	q       chan wakeReq
	mu      sync.Mutex
	last    map[slotstore.GroupID]time.Time
	dropped atomic.Uint64
}

// wakeReq is one batch of groups to wake.
type wakeReq struct {
	groups []slotstore.GroupID
	skip   slotstore.NodeID // a node not to ask (the unreachable leader's)
	only   slotstore.NodeID // the one node to ask (0: every desired peer)
}

// New returns a Waker; its worker is Run, which its node starts.
func New(cfg Config) *Waker {
	return &Waker{cfg: cfg, q: make(chan wakeReq, wakeQueueCap), last: map[slotstore.GroupID]time.Time{}}
}

// Dropped is how many batches found the queue full (each asked again by
// the next failure).
func (w *Waker) Dropped() uint64 { return w.dropped.Load() }

// Wake asks that group g's replicas leave quiesce (a no-op when
// Config.Off). Safe from any goroutine; never blocks.
func (w *Waker) Wake(g slotstore.GroupID) { w.enqueue(wakeReq{groups: []slotstore.GroupID{g}}) }

// Unreached is dispatch's hook: g's leader could not be reached, so
// every group that node leads (as this node's router knows) is woken with
// it — one cut-off node is a wake for all its groups, not one per write.
func (w *Waker) Unreached(g slotstore.GroupID, leader slotstore.NodeID) {
	if w.cfg.Off {
		return
	}
	groups := []slotstore.GroupID{g}
	if leader != 0 && leader != w.cfg.Self {
		for _, other := range w.cfg.Router.Load().LedBy(leader) {
			if other != g {
				groups = append(groups, other)
			}
		}
	} else {
		leader = 0
	}
	w.enqueue(wakeReq{groups: groups, skip: leader})
}

// WakeAll wakes groups, asking every desired peer but skip.
func (w *Waker) WakeAll(groups []slotstore.GroupID, skip slotstore.NodeID) {
	w.enqueue(wakeReq{groups: groups, skip: skip})
}

// WakeOn wakes the groups' replicas on node alone, in one batch (a
// stalled learner's leader, this node's leaders of a lost quorum: waking
// the followers would make them campaign).
func (w *Waker) WakeOn(node slotstore.NodeID, groups ...slotstore.GroupID) {
	w.enqueue(wakeReq{groups: groups, only: node})
}

// enqueue queues r's groups that were not woken within wakeEvery (all of
// them when a peer asks); a full queue drops the batch, counted.
func (w *Waker) enqueue(r wakeReq) {
	if w.cfg.Off {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	var due []slotstore.GroupID
	for _, g := range r.groups {
		// A one-node wake (a stalled learner's leader) neither waits for
		// nor holds back the group's wake of all its peers.
		if at, ok := w.last[g]; g == 0 || r.only == 0 && ok && now.Sub(at) < wakeEvery {
			continue
		}
		due = append(due, g)
	}
	if len(due) == 0 {
		return
	}
	select {
	case w.q <- wakeReq{groups: due, skip: r.skip, only: r.only}:
	default:
		w.dropped.Add(1)
		return
	}
	for _, g := range due {
		if r.only == 0 {
			w.last[g] = now
		}
	}
	if len(w.last) > 4*maxWakeBatch { // bounded: forget the old entries
		for id, at := range w.last {
			if now.Sub(at) >= wakeEvery {
				delete(w.last, id)
			}
		}
	}
}

// Run is the worker, owned by the node: it ends when stop closes.
func (w *Waker) Run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case r := <-w.q:
			if r.only == 0 || r.only == w.cfg.Self {
				for _, g := range r.groups {
					w.Local(g)
				}
			}
			if r.only != w.cfg.Self {
				w.wakePeers(r.groups, r.skip, r.only)
			}
		}
	}
}

// Local touches this node's replica of g with a ReadIndex. Asking is the
// activity that ends the quiesce; the answer does not matter and is not
// waited for (the request expires by itself when no leader answers; its
// state is left to the garbage collector, not released into dragonboat's
// pool while still pending). A no-op when Config.Off.
func (w *Waker) Local(g slotstore.GroupID) {
	if !w.cfg.Off {
		w.cfg.Touch(g)
	}
}

// wakePeers asks the other desired peers of groups (only that one, if
// set) to wake their replicas: one request per peer node for all of its
// groups, all at once, each bounded by Timeout.
func (w *Waker) wakePeers(groups []slotstore.GroupID, skip, only slotstore.NodeID) {
	st := w.cfg.Controller()
	byPeer := map[slotstore.NodeID][]slotstore.GroupID{}
	for _, g := range groups {
		if grp, ok := st.Groups[g]; ok {
			for _, id := range grp.PeerNodes() {
				if id != w.cfg.Self && id != skip && (only == 0 || id == only) && len(byPeer[id]) < maxWakeBatch {
					byPeer[id] = append(byPeer[id], g)
				}
			}
		}
	}
	var wg sync.WaitGroup
	for id, gs := range byPeer {
		addr := w.cfg.Addr(id)
		if addr == "" {
			continue
		}
		body, _ := json.Marshal(wakeBody{Groups: gs})
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(w.cfg.Life, Timeout)
			defer cancel()
			if resp, _, err := w.cfg.Peers.Call(ctx, http.MethodPost, addr, "wake", body, nil); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}

type wakeBody struct {
	Groups []slotstore.GroupID `json:"groups"`
}

// Serve is the peer endpoint "wake".
func (w *Waker) Serve(_ context.Context, rw http.ResponseWriter, r *http.Request) {
	var b wakeBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<10)).Decode(&b); err != nil || len(b.Groups) == 0 || len(b.Groups) > maxWakeBatch {
		peer.WriteError(rw, http.StatusBadRequest, slotstore.Errorf(slotstore.CodeInvalidArgument, "wake wants 1..%d groups", maxWakeBatch))
		return
	}
	for _, g := range b.Groups { // a ReadIndex does not block: no queue needed
		w.Local(g)
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write([]byte("{}\n"))
}
