package meta

import (
	"context"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Consistency selects how a read is served.
type Consistency uint8

const (
	// Linearizable reads go through Raft ReadIndex: they see every write
	// acknowledged before the read began.
	Linearizable Consistency = 0
	// Local reads serve the local replica's applied state, possibly stale.
	Local Consistency = 1
)

// Query is a read of one group's state, answered by its state machine.
// Queries cross the peer RPC when a node forwards a read, so each has a
// binary encoding (EncodeQuery, wire.go) like commands do.
type Query interface {
	// RouteSlot is the hash slot whose group answers the query.
	RouteSlot() slotstore.HashSlot
	// Kind identifies the query type on the wire (and to the state machine).
	Kind() QueryKind
	// codeQuery walks the query's fields (coder).
	codeQuery(*coder)
}

// For is a query whose answer has type A: every query declares its answer
// type (an unexported method), so a read through Read is typed end to end
// and a caller cannot expect another type. A nil pointer answers "none".
type For[A any] interface {
	Query
	answer() A
}

// Reader answers queries: a node, or the API's backend. The answer's
// dynamic type is the one the query declares (For).
type Reader interface {
	Read(ctx context.Context, q Query, c Consistency) (any, ReadInfo, error)
}

// ReaderFunc adapts a function to Reader.
type ReaderFunc func(ctx context.Context, q Query, c Consistency) (any, ReadInfo, error)

// Read calls f.
func (f ReaderFunc) Read(ctx context.Context, q Query, c Consistency) (any, ReadInfo, error) {
	return f(ctx, q, c)
}

// Read answers q through r as the type q declares. An answer of another
// type breaks r's contract: an internal error, never a panic.
func Read[A any](ctx context.Context, r Reader, q For[A], c Consistency) (A, ReadInfo, error) {
	var zero A
	v, info, err := r.Read(ctx, q, c)
	if err != nil || v == nil {
		return zero, info, err
	}
	a, ok := v.(A)
	if !ok {
		return zero, info, slotstore.Errorf(slotstore.CodeInternal, "%T answered %T, not %T", q, v, zero)
	}
	return a, info, nil
}

// GetUser reads one user. Answer: *User or nil.
type GetUser struct {
	HashSlot slotstore.HashSlot
	UID      string
}

// GetKV reads one business key. Answer: *KV or nil.
type GetKV struct {
	HashSlot slotstore.HashSlot
	Key      string
}

// ScanUsers lists users of the hash slots [FromSlot, ToSlot] — all owned by
// one group — in (slot, uid) order, starting after (FromSlot, AfterUID).
// Answer: *UserPage.
type ScanUsers struct {
	FromSlot slotstore.HashSlot
	ToSlot   slotstore.HashSlot
	AfterUID string
	Limit    int
}

// UserPage is ScanUsers' answer. More is set when the scan stopped at Limit;
// then LastSlot/LastUID say where to continue.
type UserPage struct {
	Users    []*User
	More     bool
	LastSlot slotstore.HashSlot
	LastUID  string
}

func (q *GetUser) RouteSlot() slotstore.HashSlot   { return q.HashSlot }
func (q *GetKV) RouteSlot() slotstore.HashSlot     { return q.HashSlot }
func (q *ScanUsers) RouteSlot() slotstore.HashSlot { return q.FromSlot }

// ReadInfo says who served a read and from what state.
type ReadInfo struct {
	ServedBy     slotstore.NodeID
	AppliedIndex uint64
	Route        slotstore.Route
}
