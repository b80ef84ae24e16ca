package httpapi

import (
	"context"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
	"slotmeta/internal/slotstore/routing"
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

	// Routes returns the node's current routing snapshot.
	Routes() *routing.Snapshot

	// NodeID is this node's id.
	NodeID() slotstore.NodeID

	// Ready returns nil when the node can serve every hash slot (the routing
	// table is known and every group has a live leader), else why not.
	Ready() error

	// Summary is the node's view of the cluster (GET /v1/cluster).
	Summary() slotstore.ClusterSummary

	// Nodes lists the registered nodes in id order.
	Nodes() []slotstore.NodeInfo

	// RegisterNode admits a joining node (idempotent) and returns it as the
	// controller recorded it.
	RegisterNode(ctx context.Context, n slotstore.NodeInfo) (slotstore.NodeInfo, error)

	Operator
}

// Operator is what the cluster operations need: observed status beside
// intent, safe leader transfers, preferred leaders and the decision log.
type Operator interface {
	// Groups returns every group's intent and observed fact.
	Groups(ctx context.Context) ([]slotstore.GroupView, error)
	// Group returns one group's view (not_found for an unknown group).
	Group(ctx context.Context, g slotstore.GroupID) (slotstore.GroupView, error)
	// NodeHealth returns every registered node's reachability as the
	// controller leader observes it.
	NodeHealth(ctx context.Context) ([]slotstore.NodeHealth, error)
	// LeaderTransfer runs the safety checks of moving g's leadership to
	// target and, unless dryRun, performs it. An unsafe transfer is a
	// conflict whose details name the blockers.
	LeaderTransfer(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID, dryRun bool) (slotstore.Preflight, slotstore.TransferResult, error)
	// SetPreferredLeader records the intent that node should lead g.
	SetPreferredLeader(ctx context.Context, g slotstore.GroupID, node slotstore.NodeID) error
	// Decisions returns the reconciler's decision log, oldest first.
	Decisions() []slotstore.Decision
	// AuditTrail returns the audit trail, oldest first (callers must not
	// modify it).
	AuditTrail() []slotstore.AuditRecord
	// CreateReplicaMove starts (or resumes a failed) move of g's replica.
	CreateReplicaMove(ctx context.Context, g slotstore.GroupID, from, to slotstore.NodeID) (slotstore.Task, error)
	// Tasks lists the kept tasks, newest first; Task reads one.
	Tasks() []slotstore.Task
	Task(id uint64) (slotstore.Task, error)
	// CreateSlotMigration starts (or resumes) moving a hash slot to another
	// group; permission_denied unless the node enables hash-slot migration.
	CreateSlotMigration(ctx context.Context, hs slotstore.HashSlot, to slotstore.GroupID) (slotstore.Task, error)
	// CreateGroup starts a new, empty group on peers (none: the controller
	// chooses); RetireGroup removes an empty one.
	CreateGroup(ctx context.Context, peers []slotstore.NodeID) (slotstore.Task, error)
	RetireGroup(ctx context.Context, g slotstore.GroupID) error
	// CreateSplit moves slots of g (none: the upper half) into a new group;
	// CreateMerge moves all of g's slots into another and retires g. Both
	// are permission_denied unless the node enables hash-slot migration.
	CreateSplit(ctx context.Context, g slotstore.GroupID, slots []slotstore.HashSlot, peers []slotstore.NodeID) (slotstore.Task, error)
	CreateMerge(ctx context.Context, g, into slotstore.GroupID) (slotstore.Task, error)
	// CancelTask cancels a task before its commit (conflict after).
	CancelTask(ctx context.Context, id uint64) (slotstore.Task, error)
	// DrainNode starts moving every replica and leader off a node;
	// RemoveNode removes a drained node for good.
	DrainNode(ctx context.Context, id slotstore.NodeID) (slotstore.NodeInfo, error)
	RemoveNode(ctx context.Context, id slotstore.NodeID) error
	// Balancer reports the balancer, BalancerPlan what it would do now,
	// SetBalancerPaused pauses or resumes it.
	Balancer(ctx context.Context) (slotstore.BalancerStatus, error)
	BalancerPlan(ctx context.Context) (slotstore.BalancePlan, error)
	SetBalancerPaused(ctx context.Context, paused bool) error
}
