package cluster

import (
	"context"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/controller/tasks"
	"slotmeta/internal/slotstore/heat"
	"slotmeta/internal/slotstore/meta"
	"slotmeta/internal/slotstore/projector"
)

// The node as its leaf packages see it: small adapters that implement the
// interfaces those packages declare, kept off the Node's own method set.

// taskHost is the node as the task executor sees it (tasks.Node), kept off
// the Node's own method set.
type taskHost struct{ n *Node }

var _ tasks.Node = taskHost{}

func (h taskHost) Controller() *controller.State { return h.n.ctrl.Load() }

func (h taskHost) Membership(ctx context.Context, req tasks.MembershipRequest) (tasks.Membership, error) {
	return h.n.membership(ctx, req)
}

func (h taskHost) Observe(ctx context.Context) { h.n.ObserveOnce(ctx) }

func (h taskHost) Group(ctx context.Context, g slotstore.GroupID) (slotstore.GroupView, error) {
	return h.n.Group(ctx, g)
}

func (h taskHost) GroupLeader(g slotstore.GroupID) slotstore.NodeID {
	st, _ := h.n.router.Load().Group(g)
	return st.Leader
}

func (h taskHost) Transfer(ctx context.Context, v slotstore.GroupView, target slotstore.NodeID) error {
	_, err := h.n.executeTransfer(ctx, v, target)
	return err
}

func (h taskHost) Advance(ctx context.Context, a controller.AdvanceTask) error {
	_, err := h.n.proposeControllerResult(ctx, controller.Command{AdvanceTask: &a})
	return err
}

func (h taskHost) Record(d slotstore.Decision) { h.n.record(d) }

func (h taskHost) RetireGroup(ctx context.Context, g slotstore.GroupID) error {
	_, err := h.n.proposeControllerResult(ctx, controller.Command{RetireGroup: &controller.RetireGroup{Group: g}})
	return err
}

func (h taskHost) ProposeToGroup(ctx context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error) {
	return h.n.dispatch.ProposeToGroup(ctx, g, cmd)
}

func (h taskHost) Read(ctx context.Context, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error) {
	return h.n.Read(heat.Quiet(ctx), q, c) // a slot move's copy is no client's load
}

// projectHost is the node as the outbox projector sees it
// (projector.Node), kept off the Node's own method set.
type projectHost struct{ n *Node }

var _ projector.Node = projectHost{}

func (h projectHost) Groups() []projector.Group {
	snap := h.n.router.Load()
	table := snap.Table()
	var out []projector.Group
	for id := range h.n.replicas.All() {
		g := projector.Group{ID: id}
		if st, ok := snap.Group(id); ok && st.Leader == h.n.cfg.NodeID && table != nil {
			g.Led, g.Slots = true, table.SlotsOf(id)
		}
		out = append(out, g)
	}
	return out
}

func (h projectHost) ScanOutbox(ctx context.Context, g slotstore.GroupID, q *meta.ScanOutbox) (*meta.OutboxPage, error) {
	page, _, err := meta.Read(ctx, meta.ReaderFunc(h.n.dispatch.ReadLocal), q, meta.Local)
	return page, err
}

func (h projectHost) Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error) {
	return h.n.Propose(heat.Quiet(ctx), cmd) // projections are the node's own writes
}
