package dispatch

import (
	"context"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// What a dispatcher needs of its node, as small interfaces: package cluster
// adapts its replica set, NodeHost and peer client to them; the tests of
// this package put fakes in their place (no NodeHost, no network).

// Local is this node's replicas.
type Local interface {
	// Replica is this node's running replica of g (nil: none here, or not
	// open yet).
	Replica(g slotstore.GroupID) Replica
	// HeardAgo is how long ago this node's replica of g last heard from
	// node's replica (false: it cannot tell — no replica here, or never
	// heard).
	HeardAgo(g slotstore.GroupID, node slotstore.NodeID) (time.Duration, bool)
	// GetRows answers qs[i] from this node's replica of groups[i], every
	// part from one view of the node's store: out[i] is nil for a part
	// whose replica is not open here (any more) — not read.
	GetRows(groups []slotstore.GroupID, qs []*meta.GetRows) ([]*meta.RowBatch, error)
}

// Replica is one running replica of a group on this node. Its errors are
// typed (*slotstore.Error): the engine's are mapped by the replica.
type Replica interface {
	// Submit proposes an encoded command through the group's proposer
	// (this node leads the group) and returns its result.
	Submit(ctx context.Context, enc []byte) (meta.Result, error)
	// LeaderKnown reports whether the replica knows a leader (a replica
	// that knows none cannot complete a linearizable read).
	LeaderKnown() bool
	// AwaitRead waits for one read round (ReadIndex or the leader's lease,
	// shared with the reads beside it): after it, the replica's state is
	// at least as new as any write acknowledged before the call.
	AwaitRead(ctx context.Context) error
	// Read answers q from the replica's state as it is (StaleRead).
	Read(q meta.Query) (any, error)
	// AppliedIndex is the last index the replica applied.
	AppliedIndex() uint64
}

// Peers calls other nodes (package peer's client).
type Peers interface {
	// Forward sends an encoded command to the node at addr, the group's
	// leader as this node knows it; moved closes once another node is known
	// to lead (a command still queued, not sent, is refused then). sent
	// reports whether the command may have reached the node.
	Forward(ctx context.Context, addr string, enc []byte, moved <-chan struct{}) (res meta.Result, route slotstore.Route, sent bool, err error)
	// Propose sends an encoded command for group g to the node at addr.
	Propose(ctx context.Context, addr string, enc []byte, g slotstore.GroupID) (res meta.Result, route slotstore.Route, sent bool, err error)
	// Read asks the node at addr to answer q from its replica.
	Read(ctx context.Context, addr string, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error)
}
