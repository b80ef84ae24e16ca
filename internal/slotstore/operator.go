package slotstore

import "context"

// Operator is what an operator's tools — the REST API's cluster routes and
// the console — need of a node: its view of the cluster (observed status
// beside intent), safe leader transfers, preferred leaders, tasks, the
// balancer, the decision log and the audit trail. It is declared once, here
// in the domain layer; the cluster package's Node offers it (Node.Operator),
// operatortest.Fake stands in for it in the tools' tests, and a new
// operation is added here, to both, and to the tools that show it.
type Operator interface {
	// NodeID is this node's id.
	NodeID() NodeID
	// Backups are the backups this node takes and keeps.
	Backups() Backups
	// Recovery rebuilds groups that lost their quorum (issue 29).
	Recovery() Recovery
	// History is what the console charts: every node's recent vital
	// signs and the hash slots' heat.
	History() History
	// Summary is the node's view of the cluster (GET /v1/cluster).
	Summary() ClusterSummary
	// Nodes lists the registered nodes in id order.
	Nodes() []NodeInfo
	// SlotMap is the routing table: the group of every hash slot (0 when
	// the table is not known yet).
	SlotMap() [HashSlotCount]GroupID
	// Groups returns every group's intent and observed fact.
	Groups(ctx context.Context) ([]GroupView, error)
	// Group returns one group's view (not_found for an unknown group).
	Group(ctx context.Context, g GroupID) (GroupView, error)
	// NodeHealth returns every registered node's reachability as the
	// controller leader observes it.
	NodeHealth(ctx context.Context) ([]NodeHealth, error)
	// LeaderTransfer runs the safety checks of moving g's leadership to
	// target and, unless dryRun, performs it. An unsafe transfer is a
	// conflict whose details name the blockers.
	LeaderTransfer(ctx context.Context, g GroupID, target NodeID, dryRun bool) (Preflight, TransferResult, error)
	// SetPreferredLeader records the intent that node should lead g.
	SetPreferredLeader(ctx context.Context, g GroupID, node NodeID) error
	// Decisions returns the reconciler's decision log, oldest first.
	Decisions() []Decision
	// AuditTrail returns the audit trail, oldest first (callers must not
	// modify it).
	AuditTrail() []AuditRecord
	// CreateReplicaMove starts (or resumes a failed) move of g's replica.
	CreateReplicaMove(ctx context.Context, g GroupID, from, to NodeID) (Task, error)
	// Tasks lists the kept tasks, newest first; Task reads one.
	Tasks() []Task
	Task(id uint64) (Task, error)
	// CreateSlotMigration starts (or resumes) moving a hash slot to another
	// group; permission_denied unless the node enables hash-slot migration.
	CreateSlotMigration(ctx context.Context, hs HashSlot, to GroupID) (Task, error)
	// CreateGroup starts a new, empty group on peers (none: the controller
	// chooses); RetireGroup removes an empty one.
	CreateGroup(ctx context.Context, peers []NodeID) (Task, error)
	RetireGroup(ctx context.Context, g GroupID) error
	// CreateSplit moves slots of g (none: the upper half) into a new group;
	// CreateMerge moves all of g's slots into another and retires g. Both
	// are permission_denied unless the node enables hash-slot migration.
	CreateSplit(ctx context.Context, g GroupID, slots []HashSlot, peers []NodeID) (Task, error)
	CreateMerge(ctx context.Context, g, into GroupID) (Task, error)
	// CancelTask cancels a task before its commit (conflict after).
	CancelTask(ctx context.Context, id uint64) (Task, error)
	// DrainNode starts moving every replica and leader off a node;
	// RemoveNode removes a drained node for good.
	DrainNode(ctx context.Context, id NodeID) (NodeInfo, error)
	RemoveNode(ctx context.Context, id NodeID) error
	// Balancer reports the balancer, BalancerPlan what it would do now,
	// SetBalancer pauses or resumes it and releases operator pins.
	Balancer(ctx context.Context) (BalancerStatus, error)
	BalancerPlan(ctx context.Context) (BalancePlan, error)
	SetBalancer(ctx context.Context, c BalancerChange) error
}
