package httpapi

import (
	"context"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// Backend is what the API needs from the node: replicate a command, answer a
// query, and show the routing view. cmd/server wires the cluster package's
// Node in; tests may use a real node or, for pure request-decoding tests, a
// fake.
type Backend interface {
	// Propose replicates cmd through the group that owns its route key's hash
	// slot and returns the command's own result. The backend sets the header's
	// HashSlot (from RouteKey) and TimeMs; the caller sets IdempotencyKey.
	// A non-nil error is a *slotstore.Error (queue_full, busy, timeout,
	// route_not_ready, …); a command that was applied but refused (conflict,
	// not_found, failed_precondition, …) comes back as a Result with a Code.
	Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error)

	// Reader answers q from the group that owns q.RouteSlot(), with the
	// answer type q declares (meta.For); handlers read through read, which
	// goes through meta.Read, so no handler sees an untyped answer.
	meta.Reader

	// RowsReader reads a batch's GetRows, one per group, in one call: the
	// node reads the parts its replicas hold from one view of its store.
	meta.RowsReader

	// Routes returns the node's current routing snapshot.
	Routes() *routing.Snapshot

	// Ready returns nil when the node can serve every hash slot (the routing
	// table is known and every group has a live leader), else why not.
	Ready() error

	// RegisterNode admits a joining node (idempotent) and returns it as the
	// controller recorded it.
	// RegisterNode admits n, which runs the version runs (zero: not said).
	RegisterNode(ctx context.Context, n slotstore.NodeInfo, runs slotstore.Version) (slotstore.NodeInfo, error)

	// Operator is the node's operations on the cluster, shared with the
	// console (slotstore.Operator is declared once, in the domain).
	Operator() slotstore.Operator

	// Watches is what GET /v1/watch serves from: the node's hub and the
	// change logs of its replicas (package watch).
	Watches() watch.Source
}
