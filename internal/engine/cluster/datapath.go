package cluster

import (
	"context"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// The node's data path: every write and read of the API (and of the
// node's own projector and tasks) enters here and goes down once, through
// the dispatcher (package dispatch: the local replica, or the group's
// leader one peer hop away, which serves it there — dispatch/serve.go).

// Propose replicates cmd through the group owning its route key's hash
// slot — here if this node leads it, else through its leader — and returns
// the command's own result (package dispatch has the rules).
func (n *Node) Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error) {
	return n.dispatch.Propose(ctx, cmd)
}

// Read answers q from the group owning its hash slot: the local replica
// when there is one, else a peer that holds one.
func (n *Node) Read(ctx context.Context, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error) {
	return n.dispatch.Read(ctx, q, c)
}

// ReadRows answers the GetRows of many groups (a batch read): the parts
// whose group has a replica here from one view of the store after their
// read rounds, the others as Read answers them (package dispatch).
func (n *Node) ReadRows(ctx context.Context, qs []*meta.GetRows, c meta.Consistency) []meta.RowsAnswer {
	return n.dispatch.ReadRows(ctx, qs, c)
}
