package faults

import (
	"context"
	"fmt"
	"net"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// RaftTransport returns the transport factory for node self's NodeHost
// (config.NodeHostConfig.Expert.TransportFactory). The transports it creates
// are dragonboat's default TCP transport, with the network's rules applied
// to everything self sends. Targets are Raft addresses; register them first.
func (n *Network) RaftTransport(self slotstore.NodeID) config.TransportFactory {
	return &transportFactory{net: n, self: self}
}

type transportFactory struct {
	net  *Network
	self slotstore.NodeID
}

// Create implements config.TransportFactory.
func (f *transportFactory) Create(c config.NodeHostConfig, mh raftio.MessageHandler, ch raftio.ChunkHandler) raftio.ITransport {
	return &transport{inner: newTCPTransport(c, mh, ch), net: f.net, self: f.self}
}

// Validate implements config.TransportFactory: a Raft address is host:port,
// as the default transport requires.
func (f *transportFactory) Validate(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	return err == nil && host != "" && port != ""
}

// transport applies the network's rules on the sending side of a wrapped
// transport. Receiving is untouched: dragonboat's connections carry data one
// way, so filtering at every sender covers every direction.
type transport struct {
	inner raftio.ITransport
	net   *Network
	self  slotstore.NodeID
}

var _ raftio.ITransport = (*transport)(nil)

func (t *transport) Name() string { return "faults+" + t.inner.Name() }
func (t *transport) Start() error { return t.inner.Start() }
func (t *transport) Close() error { return t.inner.Close() }
func (t *transport) refused(target string) error {
	t.net.dropped.Add(1)
	return &net.OpError{Op: "dial", Net: "tcp", Addr: addrOf(target), Err: fmt.Errorf("node %d → %s: %w", t.self, target, ErrBlocked)}
}

// GetConnection refuses a cut target as an unreachable host would.
func (t *transport) GetConnection(ctx context.Context, target string) (raftio.IConnection, error) {
	return connect(ctx, t, target, t.inner.GetConnection, func(c raftio.IConnection, to slotstore.NodeID) raftio.IConnection {
		return &connection{IConnection: c, link: link{t, to}}
	})
}

// GetSnapshotConnection refuses a cut target as an unreachable host would.
func (t *transport) GetSnapshotConnection(ctx context.Context, target string) (raftio.ISnapshotConnection, error) {
	return connect(ctx, t, target, t.inner.GetSnapshotConnection, func(c raftio.ISnapshotConnection, to slotstore.NodeID) raftio.ISnapshotConnection {
		return &snapshotConnection{ISnapshotConnection: c, link: link{t, to}}
	})
}

// connect refuses a cut target as an unreachable host would; otherwise it
// opens a connection to it with the inner transport's open and wraps it.
func connect[C any](ctx context.Context, t *transport, target string, open func(context.Context, string) (C, error), wrap func(C, slotstore.NodeID) C) (C, error) {
	var none C
	to := t.net.NodeOf(target)
	if t.net.Cut(t.self, to) {
		return none, t.refused(target)
	}
	c, err := open(ctx, target)
	if err != nil {
		return none, err
	}
	return wrap(c, to), nil
}

// link is where a wrapped connection leads: from the transport's node to
// node to.
type link struct {
	t  *transport
	to slotstore.NodeID
}

// delivered reports whether the network delivers what is sent now.
func (l link) delivered() bool { return l.t.net.Deliver(l.t.self, l.to) }

// connection swallows the batches the network does not deliver: the sender
// sees success, the receiver nothing (a black hole, not a reset).
type connection struct {
	raftio.IConnection
	link
}

func (c *connection) SendMessageBatch(b pb.MessageBatch) error {
	if !c.delivered() {
		return nil
	}
	return c.IConnection.SendMessageBatch(b)
}

// snapshotConnection fails the chunks the network does not deliver: a lost
// chunk breaks the stream (dragonboat aborts and retries the snapshot later)
// rather than stalling it until the chunk timeout.
type snapshotConnection struct {
	raftio.ISnapshotConnection
	link
}

func (c *snapshotConnection) SendChunk(ch pb.Chunk) error {
	if !c.delivered() {
		return fmt.Errorf("faults: snapshot chunk from node %d to %d: %w", c.t.self, c.to, ErrBlocked)
	}
	return c.ISnapshotConnection.SendChunk(ch)
}

// addrOf is a net.Addr for an address string, for error messages.
type addrOf string

func (a addrOf) Network() string { return "tcp" }
func (a addrOf) String() string  { return string(a) }
