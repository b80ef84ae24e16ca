package cluster

import (
	"context"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
)

// operator is the node's operations on the cluster as the API and the
// console see them (slotstore.Operator): views the controller leader holds
// come from package leader, intent goes into the controller as commands, and
// reads come from the node's copy of the controller state.
type operator struct{ n *Node }

var _ slotstore.Operator = operator{}

// Operator is the node's operations on the cluster, for the API and the
// console.
func (n *Node) Operator() slotstore.Operator { return operator{n} }

func (o operator) NodeID() slotstore.NodeID { return o.n.cfg.NodeID }

// SlotMap is the group of every hash slot in the current routing table
// (zeros before the table is known).
func (o operator) SlotMap() (m [slotstore.HashSlotCount]slotstore.GroupID) {
	if t := o.n.router.Load().Table(); t != nil {
		m = t.Groups()
	}
	return m
}

func (o operator) Groups(ctx context.Context) ([]slotstore.GroupView, error) {
	return o.n.leader.Groups(ctx)
}

func (o operator) Group(ctx context.Context, g slotstore.GroupID) (slotstore.GroupView, error) {
	return o.n.leader.Group(ctx, g)
}

func (o operator) NodeHealth(ctx context.Context) ([]slotstore.NodeHealth, error) {
	return o.n.leader.NodeHealth(ctx)
}

func (o operator) LeaderTransfer(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID, dryRun bool) (slotstore.Preflight, slotstore.TransferResult, error) {
	return o.n.leader.Transfer(ctx, g, target, dryRun, true)
}

// SetPreferredLeader records the intent that node should lead group g.
func (o operator) SetPreferredLeader(ctx context.Context, g slotstore.GroupID, node slotstore.NodeID) error {
	return o.n.ctl.proposeController(ctx, controller.Command{SetPreferred: &controller.SetPreferred{Group: g, Node: node}})
}

// Decisions returns the controller's decision log, newest last.
func (o operator) Decisions() []slotstore.Decision { return o.n.ctrl.Load().DecisionsAPI() }

// AuditTrail returns the audit trail as this node's controller replica has
// applied it, oldest first (a copy in the API's types).
func (o operator) AuditTrail() []slotstore.AuditRecord { return o.n.ctrl.Load().AuditAPI() }

func (o operator) Balancer(ctx context.Context) (slotstore.BalancerStatus, error) {
	return o.n.leader.Balancer(ctx)
}

func (o operator) BalancerPlan(ctx context.Context) (slotstore.BalancePlan, error) {
	return o.n.leader.BalancerPlan(ctx)
}

// SetBalancerPaused pauses or resumes the balancer (replicated).
func (o operator) SetBalancerPaused(ctx context.Context, paused bool) error {
	return o.n.ctl.proposeController(ctx, controller.Command{SetBalancer: &controller.SetBalancer{Paused: paused}})
}
