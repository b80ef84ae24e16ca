package raftnet

import (
	"context"
	"crypto/tls"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/goutils/stringutil"
)

// Heard records when this node last received a Raft message from each
// replica of each shard, and how long a request it sent to a replica has
// gone unanswered: the Raft view of reachability that dragonboat keeps to
// itself (a leader's "recently active" follower flags drive check-quorum but
// are not published). A follower answers each of its leader's heartbeats
// and replicates, so on the leader's node a replica that leaves them
// unanswered for a few ticks is not reachable now — whatever its node's last
// status report says. A quiesced group sends nothing, so its followers'
// silence is not evidence of anything: Unanswered tells the two apart where
// Ago cannot. The leader-transfer gates and the health of group views use it.
//
// The record is taken on both sides of the transport (Transport wraps the
// message handler dragonboat gives the transport, and each connection's
// send), so it covers every message of every shard without touching the
// Raft state machine. Times are read from the monotonic clock.
//
// Concurrency contract: Record runs on the transport's receive goroutines,
// Asked on its send goroutines; Ago and Unanswered may be called from any
// goroutine. Entries are never removed (one per replica a node ever
// exchanged a message with; replica ids are never reused).
type Heard struct {
	base time.Time
	now  func() time.Duration // since base (tests replace it)
	mu   sync.RWMutex
	at   map[heardKey]*heardEntry
	// snaps counts, per receiving replica, the snapshot bytes this node
	// received for it (SnapshotBytes).
	snaps map[heardKey]*atomic.Uint64
}

type heardKey struct{ shard, replica uint64 }

// heardEntry holds nanoseconds since base, each stored +1 so that 0 means
// never / none.
type heardEntry struct {
	heard atomic.Int64 // the last message received from the replica
	asked atomic.Int64 // the first request sent to it since then (0: none unanswered)
}

func NewHeard() *Heard {
	h := &Heard{base: time.Now(), at: map[heardKey]*heardEntry{}, snaps: map[heardKey]*atomic.Uint64{}}
	h.now = func() time.Duration { return time.Since(h.base) }
	return h
}

// entry returns k's entry, creating it.
func (h *Heard) entry(k heardKey) *heardEntry { return getOrMake(&h.mu, h.at, k) }

// getOrMake returns m[k], made (zero) under mu's write lock the first time;
// lookups after that take only its read lock.
func getOrMake[V any](mu *sync.RWMutex, m map[heardKey]*V, k heardKey) *V {
	mu.RLock()
	v := m[k]
	mu.RUnlock()
	if v == nil {
		mu.Lock()
		if v = m[k]; v == nil {
			v = new(V)
			m[k] = v
		}
		mu.Unlock()
	}
	return v
}

func (h *Heard) lookup(k heardKey) *heardEntry {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.at[k]
}

// Record notes every sender of a received batch: each message answers
// whatever this node asked of its sender. Batches usually carry messages of
// few shards from one node, so consecutive repeats are skipped.
func (h *Heard) Record(b pb.MessageBatch) {
	now := int64(h.now()) + 1
	var last heardKey
	for i := range b.Requests {
		k := heardKey{b.Requests[i].ShardID, b.Requests[i].From}
		if i > 0 && k == last {
			continue
		}
		last = k
		e := h.entry(k)
		e.heard.Store(now)
		e.asked.Store(0)
	}
}

// Asked notes the requests of a batch this node is about to send: the
// heartbeats and replicates a leader sends, which every follower that gets
// them answers. Nothing else is counted — a follower's answers ask for
// nothing, and a leader entering quiesce tells its followers so without an
// answer.
func (h *Heard) Asked(b pb.MessageBatch) {
	now := int64(h.now()) + 1
	var last heardKey
	for i := range b.Requests {
		m := &b.Requests[i]
		if m.Type != pb.Heartbeat && m.Type != pb.Replicate {
			continue
		}
		k := heardKey{m.ShardID, m.To}
		if k == last {
			continue
		}
		last = k
		e := h.entry(k)
		if e.asked.Load() == 0 {
			e.asked.CompareAndSwap(0, now)
		}
	}
}

// snapshotChunk counts n bytes of a snapshot chunk this node received for
// its replica of shard.
func (h *Heard) snapshotChunk(shard, replica uint64, n int) {
	getOrMake(&h.mu, h.snaps, heardKey{shard, replica}).Add(uint64(n))
}

// SnapshotBytes is how many bytes of snapshots this node has received for
// its replica of shard: a learner's catch-up that a snapshot carries shows
// as progress here while its log and applied index stand still (a
// replica move's catch-up phase reads it). Entries are never removed (one
// per replica that ever received a snapshot here).
func (h *Heard) SnapshotBytes(shard, replica uint64) uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if c := h.snaps[heardKey{shard, replica}]; c != nil {
		return c.Load()
	}
	return 0
}

// Ago is how long ago this node last heard from replica of shard, and
// whether it ever did.
func (h *Heard) Ago(shard, replica uint64) (time.Duration, bool) {
	e := h.lookup(heardKey{shard, replica})
	if e == nil {
		return 0, false
	}
	at := e.heard.Load()
	if at == 0 {
		return 0, false
	}
	return h.now() - time.Duration(at-1), true
}

// Unanswered is how long the oldest request this node sent to replica of
// shard since it last heard from it has waited (0: none waits — also when
// nothing was sent, as in a quiesced group).
func (h *Heard) Unanswered(shard, replica uint64) time.Duration {
	e := h.lookup(heardKey{shard, replica})
	if e == nil {
		return 0
	}
	at := e.asked.Load()
	if at == 0 {
		return 0
	}
	return max(h.now()-time.Duration(at-1), 0)
}

// Transport is the Raft transport factory of every NodeHost: the
// transport of Inner (nil: dragonboat's own TCP transport), with the
// received messages recorded in Heard before dragonboat handles them.
type Transport struct {
	Inner config.TransportFactory // nil: dragonboat's TCP transport
	Heard *Heard
	// Refuse, when set, drops every batch from a source address it names
	// (a node the cluster removed) before anything reads it.
	Refuse func(sourceAddr string) bool
	// ServerTLS, when set, is the TLS of the Raft port's server side, read
	// at every handshake (server.go): dragonboat's transport then serves only
	// connections this node accepted with it. Only with dragonboat's own
	// transport (Inner nil).
	ServerTLS *tls.Config
	// Bounds bound the Raft port's connections (server.go; Inner nil only).
	Bounds Bounds
	// Sending, when set, sees every message batch before a connection
	// writes it (raftlog.Factory.Sending records the entries a replica
	// sends ahead of its own save).
	Sending func(pb.MessageBatch)
	// SnapshotBytes, when set, is told of every snapshot chunk's data
	// this node sends or receives (for metrics: it must not block).
	SnapshotBytes func(sent bool, n int)
	// Hold, when set and true, drops what other nodes send this node's
	// replicas to store — appends (Replicate, InstallSnapshot) and
	// snapshot chunks — before dragonboat sees them: the node's disk is
	// full (package diskguard). Its follower replicas fall behind as over a
	// lossy link; the leader sends again (a heartbeat answer shows the
	// follower behind, dragonboat raft.go handleLeaderHeartbeatResp) once
	// Hold is false. Everything else — heartbeats, votes, read indexes —
	// passes, so the replicas stay members and elections stay quiet. It is
	// called on every received batch: it must be cheap and must not block.
	Hold func() bool
	// Held, when set, is told of what Hold dropped (for metrics).
	Held func(messages, chunks int)
}

var _ config.TransportFactory = Transport{}

// Create implements config.TransportFactory.
func (f Transport) Create(c config.NodeHostConfig, mh raftio.MessageHandler, ch raftio.ChunkHandler) raftio.ITransport {
	t := f.create(c, mh, ch)
	before := f.Heard.Asked
	if f.Sending != nil {
		before = func(b pb.MessageBatch) {
			f.Heard.Asked(b)
			f.Sending(b)
		}
	}
	return sendHook{ITransport: t, before: before, chunkBytes: f.SnapshotBytes}
}

func (f Transport) create(c config.NodeHostConfig, mh raftio.MessageHandler, ch raftio.ChunkHandler) raftio.ITransport {
	inner := ch
	ch = func(c pb.Chunk) bool {
		if f.Hold != nil && f.Hold() {
			f.held(0, 1)
			return false // the sender's snapshot fails; the leader sends it again later
		}
		if !inner(c) {
			return false // turned away (out of order, too many at once, ...): no progress
		}
		f.Heard.snapshotChunk(c.ShardID, c.ReplicaID, len(c.Data))
		if f.SnapshotBytes != nil {
			f.SnapshotBytes(false, len(c.Data))
		}
		return true
	}
	handle := func(b pb.MessageBatch) {
		if f.Refuse != nil && f.Refuse(b.SourceAddress) {
			return
		}
		f.Heard.Record(b) // heard, even if held
		if f.Hold != nil && f.Hold() {
			var dropped int
			if b, dropped = withoutAppends(b); dropped > 0 {
				f.held(dropped, 0)
			}
			if len(b.Requests) == 0 {
				return
			}
		}
		mh(b)
	}
	switch {
	case f.Inner != nil:
		return f.Inner.Create(c, handle, ch)
	}
	addr := c.GetListenAddress()
	c.ListenAddress = "127.0.0.1:0" // dragonboat's own listener: never started (server.go)
	return newServerTransport(newTCPTransport(c, handle, ch), addr, f.ServerTLS, f.Bounds)
}

func (f Transport) held(messages, chunks int) {
	if f.Held != nil {
		f.Held(messages, chunks)
	}
}

// withoutAppends is b without the messages that would make a replica
// store something (Hold), and how many it left out. b is not changed.
func withoutAppends(b pb.MessageBatch) (pb.MessageBatch, int) {
	keep := make([]pb.Message, 0, len(b.Requests))
	for _, m := range b.Requests {
		if m.Type != pb.Replicate && m.Type != pb.InstallSnapshot {
			keep = append(keep, m)
		}
	}
	dropped := len(b.Requests) - len(keep)
	b.Requests = keep
	return b, dropped
}

// sendHook shows every batch to before ahead of its connection's write,
// and counts the snapshot chunks' bytes it sends (chunkBytes; nil: none).
type sendHook struct {
	raftio.ITransport
	before     func(pb.MessageBatch)
	chunkBytes func(sent bool, n int)
}

func (s sendHook) GetSnapshotConnection(ctx context.Context, target string) (raftio.ISnapshotConnection, error) {
	c, err := s.ITransport.GetSnapshotConnection(ctx, target)
	if err != nil || s.chunkBytes == nil {
		return c, err
	}
	return countedChunks{ISnapshotConnection: c, count: s.chunkBytes}, nil
}

type countedChunks struct {
	raftio.ISnapshotConnection
	count func(sent bool, n int)
}

func (c countedChunks) SendChunk(chunk pb.Chunk) error {
	err := c.ISnapshotConnection.SendChunk(chunk)
	if err == nil {
		c.count(true, len(chunk.Data))
	}
	return err
}

func (s sendHook) GetConnection(ctx context.Context, target string) (raftio.IConnection, error) {
	c, err := s.ITransport.GetConnection(ctx, target)
	if err != nil {
		return nil, err
	}
	return hookedConn{IConnection: c, before: s.before}, nil
}

type hookedConn struct {
	raftio.IConnection
	before func(pb.MessageBatch)
}

func (c hookedConn) SendMessageBatch(b pb.MessageBatch) error {
	c.before(b)
	return c.IConnection.SendMessageBatch(b)
}

// Validate implements config.TransportFactory with the rule dragonboat
// applies to its own transport's addresses. dragonboat asks for every
// message it receives, and the rule is a regular expression (4 % of a node's
// CPU with 256 idle groups), so answers are remembered: the rule is a pure
// function of the address, and a node hears from few addresses.
func (f Transport) Validate(addr string) bool {
	if f.Inner != nil {
		return f.Inner.Validate(addr)
	}
	if v, ok := validAddrs.Load(addr); ok {
		return v.(bool)
	}
	ok := stringutil.IsValidAddress(addr)
	if validAddrCount.Add(1) <= maxValidAddrs {
		validAddrs.Store(addr, ok)
	}
	return ok
}

// validAddrs remembers Validate's answers, for at most maxValidAddrs
// addresses (then it stops growing and the rule is applied again).
var (
	validAddrs     sync.Map // string → bool
	validAddrCount atomic.Int64
)

const maxValidAddrs = 4096

// newTCPTransport is dragonboat's default TCP transport, the one a NodeHost
// builds when Expert.TransportFactory is nil. Its constructor lives in an
// internal package and a custom factory replaces the transport entirely, so
// wrapping the production transport (instead of running a substitute) means
// reaching it by name (ADR 0007). The signature must match the pinned module
// (go.mod: github.com/lni/dragonboat/v4 v4.0.0-20250723143628-076c7f6497dc,
// internal/transport/tcp.go); TestDragonboatPin holds the version.
//
//go:linkname newTCPTransport github.com/lni/dragonboat/v4/internal/transport.NewTCPTransport
func newTCPTransport(nhConfig config.NodeHostConfig, requestHandler raftio.MessageHandler, chunkHandler raftio.ChunkHandler) raftio.ITransport
