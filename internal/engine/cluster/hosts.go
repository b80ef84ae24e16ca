package cluster

import (
	"context"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/leader"
	"github.com/slotmeta/slotmeta/internal/engine/controller/tasks"
	"github.com/slotmeta/slotmeta/internal/engine/heat"
	"github.com/slotmeta/slotmeta/internal/engine/projector"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/engine/replicas"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// The node as its leaf packages see it: small adapters that implement the
// interfaces those packages declare, kept off the Node's own method set.

// leaderHost is the node as the controller leader's work sees it
// (leader.Host), kept off the Node's own method set.
type leaderHost struct{ n *Node }

var _ leader.Host = leaderHost{}

func (h leaderHost) Controller() *controller.State { return h.n.ctrl.Load() }

func (h leaderHost) ControllerLeader() slotstore.NodeID {
	return slotstore.NodeID(h.n.ctrlLeader.Load())
}

func (h leaderHost) SyncController(ctx context.Context) error {
	if _, err := h.n.nh.SyncRead(ctx, controller.ShardID, controller.Barrier{}); err != nil {
		return propose.RaftError(err, 0, false)
	}
	return nil
}

func (h leaderHost) Propose(ctx context.Context, c controller.Command) (controller.Result, error) {
	return h.n.ctl.proposeControllerResult(ctx, c)
}

func (h leaderHost) Status(ctx context.Context) slotstore.NodeStatus { return h.n.LocalStatus(ctx) }

func (h leaderHost) ControllerMembers(ctx context.Context) (voters, nonVoting []slotstore.NodeID, err error) {
	return h.n.ctl.members(ctx)
}

func (h leaderHost) PromoteController(ctx context.Context, id slotstore.NodeID) error {
	return h.n.ctl.promote(ctx, id)
}

func (h leaderHost) PeerAddr(id slotstore.NodeID) string { return h.n.dispatch.PeerAddrOf(id) }

func (h leaderHost) TransferHere(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID) (slotstore.NodeID, uint64, error) {
	if err := h.n.xfer.TransferLeader(ctx, g, target); err != nil {
		return 0, 0, err
	}
	st, _ := h.n.router.Load().Group(g)
	return st.Leader, st.Term, nil
}

func (h leaderHost) Wake(groups []slotstore.GroupID, skip slotstore.NodeID) {
	h.n.wakes.WakeAll(groups, skip)
}

func (h leaderHost) WakeOn(g slotstore.GroupID, node slotstore.NodeID) {
	h.n.wakes.WakeOn(node, g)
}

func (h leaderHost) Membership(ctx context.Context, req tasks.MembershipRequest) (tasks.Membership, error) {
	return h.n.membership(ctx, req)
}

func (h leaderHost) GroupLeader(g slotstore.GroupID) slotstore.NodeID {
	st, _ := h.n.router.Load().Group(g)
	return st.Leader
}

func (h leaderHost) ProposeToGroup(ctx context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error) {
	return h.n.dispatch.ProposeToGroup(ctx, g, cmd)
}

func (h leaderHost) Read(ctx context.Context, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error) {
	return h.n.Read(heat.Quiet(ctx), q, c) // a slot move's copy is no client's load
}

// projectHost is the node as the outbox projector sees it
// (projector.Node), kept off the Node's own method set.
type projectHost struct {
	self      slotstore.NodeID
	router    *routing.Router
	replicas  *replicas.Set
	readLocal meta.ReaderFunc
	propose   func(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error)
}

var _ projector.Node = projectHost{}

func (h projectHost) Groups() []projector.Group {
	snap := h.router.Load()
	table := snap.Table()
	var out []projector.Group
	for id, r := range h.replicas.All() {
		g := projector.Group{ID: id, Applied: r.AppliedIndex(), Open: r.Open()}
		if st, ok := snap.Group(id); ok && st.Leader == h.self && table != nil {
			g.Led, g.Slots = true, table.SlotsOf(id)
		}
		out = append(out, g)
	}
	return out
}

func (h projectHost) ScanOutbox(ctx context.Context, g slotstore.GroupID, q *meta.ScanOutbox) (*meta.OutboxPage, error) {
	page, _, err := meta.Read(ctx, h.readLocal, q, meta.Local)
	return page, err
}

func (h projectHost) Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error) {
	return h.propose(heat.Quiet(ctx), cmd) // projections are the node's own writes
}
