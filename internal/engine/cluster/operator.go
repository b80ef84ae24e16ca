package cluster

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/leader"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// operator is the node's operations on the cluster as the API and the
// console see them (slotstore.Operator): views the controller leader holds
// come from package leader, intent goes into the controller as commands, and
// reads come from the node's copy of the controller state.
//
// It holds what it uses, not the node: the node builds it once its parts
// exist (after New).
type operator struct {
	id          slotstore.NodeID
	noSlotMoves bool // Config.DisableHashSlotMoves
	router      *routing.Router
	leader      *leader.Leader                    // views, transfers, the balancer
	ctl         controllerReplica                 // proposals to the controller
	ctrl        *atomic.Pointer[controller.State] // this node's copy of the controller state
	ready       func() error                      // Node.Ready
	backups     slotstore.Backups
	recovery    slotstore.Recovery
	history     histories
	// electionTimeout bounds the wait for the controller's leadership to move.
	electionTimeout time.Duration
	// manualPin is how long a manual action pins its groups
	// (Config.ManualPin; ≤ 0: not at all), from now.
	manualPin time.Duration
	now       func() time.Time
}

var _ slotstore.Operator = operator{}

// Operator is the node's operations on the cluster, for the API and the
// console.
func (n *Node) Operator() slotstore.Operator {
	return operator{id: n.cfg.NodeID, noSlotMoves: n.cfg.DisableHashSlotMoves, router: n.router,
		leader: n.leader, ctl: n.ctl, ctrl: &n.ctrl, ready: n.Ready, electionTimeout: n.cfg.electionTimeout(), backups: n.backups, recovery: n.recovery,
		history:   histories{self: n.cfg.NodeID, rec: n.history, peers: n.peers, addr: n.dispatch.PeerAddrOf, leader: n.leader},
		manualPin: n.cfg.ManualPin, now: n.cfg.Now}
}

// Backups are the backups this node takes (package backupjob).
func (o operator) Backups() slotstore.Backups { return o.backups }

// Recovery rebuilds groups that lost their quorum (recovery.go).
func (o operator) Recovery() slotstore.Recovery { return o.recovery }

// History is every node's recent vital signs and the hash slots' heat
// (history.go).
func (o operator) History() slotstore.History { return o.history }

func (o operator) NodeID() slotstore.NodeID { return o.id }

// SlotMap is the group of every hash slot in the current routing table
// (zeros before the table is known).
func (o operator) SlotMap() (m [slotstore.HashSlotCount]slotstore.GroupID) {
	if t := o.router.Load().Table(); t != nil {
		m = t.Groups()
	}
	return m
}

func (o operator) Groups(ctx context.Context) ([]slotstore.GroupView, error) {
	return o.leader.Groups(ctx)
}

func (o operator) Group(ctx context.Context, g slotstore.GroupID) (slotstore.GroupView, error) {
	return o.leader.Group(ctx, g)
}

func (o operator) NodeHealth(ctx context.Context) ([]slotstore.NodeHealth, error) {
	return o.leader.NodeHealth(ctx)
}

func (o operator) LeaderTransfer(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID, dryRun bool) (slotstore.Preflight, slotstore.TransferResult, error) {
	return o.leader.Transfer(ctx, g, target, dryRun, true)
}

// SetPreferredLeader records the intent that node should lead group g.
func (o operator) SetPreferredLeader(ctx context.Context, g slotstore.GroupID, node slotstore.NodeID) error {
	return o.ctl.proposeController(ctx, o.pinned(controller.Command{SetPreferred: &controller.SetPreferred{Group: g, Node: node}}))
}

// pinned is c, a manual action, pinning the groups it names for
// manualPin (controller/pins.go): the balancer leaves them be.
func (o operator) pinned(c controller.Command) controller.Command {
	if o.manualPin > 0 {
		c.PinUntilMs = o.now().Add(o.manualPin).UnixMilli()
	}
	return c
}

// Decisions returns the controller's decision log, newest last.
func (o operator) Decisions() []slotstore.Decision { return o.ctrl.Load().DecisionsAPI() }

// AuditTrail returns the audit trail as this node's controller replica has
// applied it, oldest first (a copy in the API's types).
func (o operator) AuditTrail() []slotstore.AuditRecord { return o.ctrl.Load().AuditAPI() }

func (o operator) Balancer(ctx context.Context) (slotstore.BalancerStatus, error) {
	return o.leader.Balancer(ctx)
}

func (o operator) BalancerPlan(ctx context.Context) (slotstore.BalancePlan, error) {
	return o.leader.BalancerPlan(ctx)
}

// SetBalancer pauses or resumes the balancer and releases operator pins
// (replicated).
func (o operator) SetBalancer(ctx context.Context, c slotstore.BalancerChange) error {
	if c.Paused != nil {
		if err := o.ctl.proposeController(ctx, controller.Command{SetBalancer: &controller.SetBalancer{Paused: *c.Paused}}); err != nil {
			return err
		}
	}
	if len(c.ReleasePins) > 0 {
		return o.ctl.proposeController(ctx, controller.Command{ReleasePins: &controller.ReleasePins{Groups: c.ReleasePins}})
	}
	return nil
}
