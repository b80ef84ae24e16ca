// Package faults injects network and disk faults into real, in-process
// slotmeta clusters (real dragonboat NodeHosts over loopback TCP, real Pebble
// stores), so tests can cut, lose and slow traffic between chosen nodes.
//
// Model. A *Network is shared by every node of one test cluster. Its address
// book maps each node's Raft and peer-RPC addresses to its NodeID; its rules
// decide, per directed pair (from → to), whether a message is delivered:
//
//   - Isolate(id) cuts id from every other node, both ways (nodes that
//     register later included);
//   - Partition(sides...) cuts every pair of nodes on different sides, both
//     ways (a node on no side keeps reaching everyone);
//   - DropOneWay(from, to) cuts one direction only;
//   - Lossy(from, to, p, seed) drops a fraction p of what survives the cuts,
//     drawn from a seeded generator (0 is a wildcard for from or to);
//   - Heal removes every rule.
//
// A message whose sender or receiver is not in the address book (NodeID 0) is
// always delivered. Rules take effect for the next message; what is already
// in a socket buffer still arrives, as on a real network.
//
// The rules are enforced on the sending side of both transports:
//   - Raft: RaftTransport(self) wraps dragonboat's own TCP transport (which
//     dragonboat does not export: tcp.go reaches it by name). A cut target
//     refuses new connections (like an unreachable host), swallows message
//     batches on established ones (like a black hole: the sender is told
//     nothing, Raft sees only silence) and breaks snapshot streams.
//   - Peer RPC: PeerTransport(self) wraps the peer client's http.RoundTripper.
//     A cut request direction fails as a dial error (nothing was sent); a cut
//     reply direction discards the answer after the peer acted on it (the
//     caller cannot know the outcome), which is what a one-way drop does.
//     With Hang(true) a cut request direction hangs instead, until the
//     request's context ends — what a link that drops every packet does to
//     a connection in use (no reset, no refusal: only the caller's deadline
//     ends it).
//
// A *Disk (disk.go) slows fsync on one node's dragonboat LogDB and Pebble
// store.
//
// Concurrency contract. Every method of Network and Disk is safe for
// concurrent use, and rule changes may race with traffic. Neither type owns
// a goroutine; Disk.Close wakes every sleeping Sync.
package faults

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// ErrBlocked is the cause of every message the Network refuses to deliver.
var ErrBlocked = errors.New("faults: link cut by the fault network")

type pair struct{ from, to slotstore.NodeID }

// lossRule drops a fraction of the messages of the pairs it matches.
type lossRule struct {
	from, to slotstore.NodeID // 0: any
	p        float64
	rng      *rand.Rand
}

// Network decides which messages between the nodes of one test cluster are
// delivered. The zero value is not usable: call NewNetwork.
type Network struct {
	mu       sync.Mutex
	book     map[string]slotstore.NodeID // raft and peer addresses → node
	isolated map[slotstore.NodeID]bool
	cut      map[pair]bool
	loss     []lossRule
	hang     atomic.Bool

	dropped atomic.Uint64
}

// NewNetwork returns a network with an empty address book that delivers everything.
func NewNetwork() *Network {
	return &Network{book: map[string]slotstore.NodeID{}, isolated: map[slotstore.NodeID]bool{}, cut: map[pair]bool{}}
}

// Register records that the given addresses (host:port, Raft or peer RPC)
// belong to node id. Registering an address again moves it to id.
func (n *Network) Register(id slotstore.NodeID, addrs ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range addrs {
		if a != "" {
			n.book[a] = id
		}
	}
}

// NodeOf returns the node an address belongs to (0: unknown).
func (n *Network) NodeOf(addr string) slotstore.NodeID {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.book[addr]
}

// Isolate cuts node id from every other node in both directions.
func (n *Network) Isolate(id slotstore.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated[id] = true
}

// Partition cuts every pair of nodes that are on different sides, both ways.
func (n *Network) Partition(sides ...[]slotstore.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, a := range sides {
		for j, b := range sides {
			if i == j {
				continue
			}
			for _, x := range a {
				for _, y := range b {
					if x != y {
						n.cut[pair{x, y}] = true
					}
				}
			}
		}
	}
}

// DropOneWay cuts the direction from → to; to → from still delivers.
func (n *Network) DropOneWay(from, to slotstore.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[pair{from, to}] = true
}

// Lossy drops a fraction p (clamped to [0, 1]) of the messages from → to
// that the cuts let through, drawing from a generator seeded with seed.
// Either node may be 0 to match any node. Rules add up: a message survives
// only if every matching rule lets it through.
func (n *Network) Lossy(from, to slotstore.NodeID, p float64, seed uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p = min(max(p, 0), 1)
	n.loss = append(n.loss, lossRule{from: from, to: to, p: p, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))})
}

// Hang makes peer requests over a cut direction hang until their context
// ends (true) instead of failing at once as a refused dial (false, the
// default). Heal does not change it.
func (n *Network) Hang(on bool) { n.hang.Store(on) }

// Heal removes every cut and loss rule. The address book stays.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.isolated)
	clear(n.cut)
	n.loss = nil
}

// Cut reports whether the direction from → to is cut (loss rules aside).
func (n *Network) Cut(from, to slotstore.NodeID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cutLocked(from, to)
}

func (n *Network) cutLocked(from, to slotstore.NodeID) bool {
	if from == 0 || to == 0 || from == to {
		return false
	}
	return n.isolated[from] || n.isolated[to] || n.cut[pair{from, to}]
}

// Deliver decides the fate of one message from → to: false if the direction
// is cut or a loss rule drops it. Every false is counted in Dropped.
func (n *Network) Deliver(from, to slotstore.NodeID) bool {
	n.mu.Lock()
	ok := !n.cutLocked(from, to)
	if ok && from != to && from != 0 && to != 0 {
		for _, r := range n.loss {
			if (r.from == 0 || r.from == from) && (r.to == 0 || r.to == to) && r.rng.Float64() < r.p {
				ok = false
				break
			}
		}
	}
	n.mu.Unlock()
	if !ok {
		n.dropped.Add(1)
	}
	return ok
}

// Dropped is the number of messages (Raft batches, snapshot chunks, peer
// requests and replies, connection attempts) the network has refused so far.
func (n *Network) Dropped() uint64 { return n.dropped.Load() }
