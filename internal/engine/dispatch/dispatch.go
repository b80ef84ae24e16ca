// Package dispatch routes each command and query of a node to the replica
// that serves it: the local proposer when this node leads the group, else
// the leader over peer RPC; the local replica for a read when there is one,
// else a peer that holds one.
//
// Model. A route comes from the node's routing snapshot. A forward follows
// a newer leader hint at once at most MaxForwardHops times (a hint with a
// term also moves the router: a leader change, after which the write goes
// to the newest leader again — at most maxProposeRounds rounds within
// LeaderWait in all), and only refusals that
// prove the command was not proposed — or, under an Idempotency-Key, also a
// forward cut short by a leader change, since the group answers a replay
// from its first result — so nothing is applied twice by forwarding. A hop
// has its own deadline and follows a leader change at once; a write that
// finds no reachable leader waits for the next leader change, at most
// LeaderWait (ADR 0007).
//
// Both halves of forwarding live here: sending (write.go, forward.go,
// read.go; readrows.go reads a batch's parts of many groups together) and
// serving what other nodes send (serve.go, registered on the node's peer
// server). What the dispatcher needs of its node is three small interfaces
// (local.go: this node's replicas, one replica, the other nodes), so that
// its tests run it alone: testdata/forward, testdata/read and
// testdata/readrows script what each call meets — hints, unreachable or
// silent leaders, leader changes mid-hop, the Idempotency-Key resend, a
// replica stopped under a read — and show what the caller is answered.
//
// Concurrency contract. A Dispatcher holds no state of its own beyond its
// configuration: every method may be called from any goroutine, and each is
// bounded by the context given (and by the hop deadline within it).
package dispatch

import (
	"context"
	"net/http"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/heat"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// Config is what a dispatcher needs of its node.
type Config struct {
	NodeID slotstore.NodeID
	Router *routing.Router
	Local  Local // this node's replicas
	Peers  Peers // the other nodes
	// Controller is the controller state as this node applied it (peer
	// addresses, each group's desired peers).
	Controller func() *controller.State
	// Forwarding bounds (package cluster's Config has their meaning).
	MaxForwardHops                                  int
	ForwardHopTimeout, ForwardMoveGrace, LeaderWait time.Duration
	ElectionTimeout                                 time.Duration
	Now                                             func() time.Time
	// Metrics hooks: every proposal's outcome; forwards cut short by a
	// leader change.
	Proposal   func(g slotstore.GroupID, code slotstore.Code)
	LeaderMove func(redirected bool)
	// Forwarded, when set, is told how long each forward hop of a write
	// took and how it ended (nil: answered).
	Forwarded func(took time.Duration, err error)
	// Heat counts the reads and writes this node resolved, per hash slot
	// (nil: not counted).
	Heat *heat.Counters
	// ServedWrite, when set, is told of every command this node served for
	// another node (serve.go): res and err are what proposing it gave.
	ServedWrite func(ctx context.Context, r *http.Request, cmd meta.Command, res *meta.Result, err error)
	// Wake, when set, is told of a group whose leader (0: none known) could
	// not be reached (no leader known, a forward that failed or timed out):
	// a quiesced group must be woken to elect a new one — and so must the
	// other groups that node leads (waker.Waker.Unreached). It must
	// not block.
	Wake func(g slotstore.GroupID, leader slotstore.NodeID)
	// Refuse, when set, is asked before a write this node leads is
	// proposed: an error is the write's answer (a node whose disk is low,
	// package diskguard).
	Refuse func() error
	// Behind, when set and true, says this node's follower replicas fall
	// behind on purpose (its disk is full: they store nothing others send,
	// package diskguard): a linearizable read asks the leader's node at
	// once instead of waiting on them.
	Behind func() bool
}

// Dispatcher routes a node's commands and queries.
type Dispatcher struct{ cfg Config }

// New returns a dispatcher.
func New(cfg Config) *Dispatcher { return &Dispatcher{cfg: cfg} }

// PeerAddrOf returns the peer RPC address of node id from the controller state.
func (d *Dispatcher) PeerAddrOf(id slotstore.NodeID) string {
	if node, ok := d.cfg.Controller().Nodes[id]; ok {
		return node.PeerAddr
	}
	return ""
}
