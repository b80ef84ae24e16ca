package slotstore

import "fmt"

// BalanceKind is what a balancer action asks the controller to do.
type BalanceKind string

// Balancer action kinds.
const (
	BalanceMoveReplica BalanceKind = "move_replica" // Group's replica From → To
	BalanceSetLeader   BalanceKind = "set_leader"   // Group's preferred leader To
	BalanceMoveSlot    BalanceKind = "move_slot"    // HashSlot from Group to ToGroup
	BalanceSplitGroup  BalanceKind = "split_group"  // the upper half of Group's slots into a new group
	BalanceMergeGroup  BalanceKind = "merge_group"  // every slot of Group into ToGroup; Group retired
)

// BalanceAction is one step of a balancer plan, with the reason and the
// numbers behind it.
type BalanceAction struct {
	Kind     BalanceKind `json:"kind"`
	Reason   Reason      `json:"reason"` // drain, replica_count, leader_count, slot_load, slot_count, scale_out, scale_in
	Group    GroupID     `json:"group"`
	ToGroup  GroupID     `json:"to_group,omitempty"`
	From     NodeID      `json:"from_node,omitempty"`
	To       NodeID      `json:"to_node,omitempty"`
	HashSlot HashSlot    `json:"hash_slot,omitempty"`
	Detail   string      `json:"detail"`
}

// BalancePlan is what the balancer would do now and, when it waits, why.
type BalancePlan struct {
	Actions []BalanceAction `json:"actions"`
	// Held says why balancing (not draining) waits, e.g. "node 3 is
	// unreachable"; "" when it does not.
	Held string `json:"held,omitempty"`
	// Balanced lists the dimensions found within their thresholds:
	// group_count, replica_count, leader_count, slot_load, slot_count.
	Balanced []string `json:"balanced,omitempty"`
	// HeldReason names why Held: fault_open, or hot_slot (a hash slot
	// carries more than a group may, and nothing else moves the load).
	HeldReason Reason `json:"held_reason,omitempty"`
	// Hot are the hash slots that alone carry more than the busiest group
	// may (the mean group load × the skew allowed): one hot key, or a few
	// in one slot, that no placement spreads — moving the slot only moves
	// the heat (split the key in the application, or accept it).
	Hot []HotSlot `json:"hot,omitempty"`
}

// HotSlot is a hash slot whose own load no move can spread.
type HotSlot struct {
	Slot      HashSlot `json:"hash_slot"`
	Group     GroupID  `json:"group"`
	OpsPerSec float64  `json:"ops_per_sec"`
	// OfMean is its load over the mean group load.
	OfMean float64 `json:"of_mean"`
}

// BalancerStatus is the balancer as the API and console show it.
type BalancerStatus struct {
	Enabled    bool  `json:"enabled"` // off on this node's configuration (never balances)
	Paused     bool  `json:"paused"`  // paused by an operator (replicated)
	PausedAtMs int64 `json:"changed_at_ms,omitempty"`
	// IntervalMs is how often the controller leader plans.
	IntervalMs int64 `json:"interval_ms"`
	// LastRoundAtMs and LastPlan: the controller leader's latest round.
	LastRoundAtMs int64       `json:"last_round_at_ms,omitempty"`
	LastPlan      BalancePlan `json:"last_plan"`
	// Load is the measured load per node (operations per second that the
	// node's API served, reads and writes), as the controller keeps it.
	Load []NodeLoad `json:"load"`
	// Drains is the progress of every draining node.
	Drains []DrainProgress `json:"drains"`
	// Pins are the groups an operator's manual action pinned: the
	// balancer plans nothing for them but drains until UntilMs.
	Pins       []GroupPin `json:"pins"`
	Aggregator NodeID     `json:"aggregator"`
}

// GroupPin is a group an operator's manual action (Why: move,
// preferred_leader, split, merge, slot_migration) pinned at AtMs.
type GroupPin struct {
	Group   GroupID `json:"group"`
	UntilMs int64   `json:"until_ms"`
	Why     string  `json:"why"`
	AtMs    int64   `json:"at_ms"`
}

// BalancerChange is an operator's change to the balancer: pause or resume
// it (Paused set), release the pins of groups.
type BalancerChange struct {
	Paused      *bool
	ReleasePins []GroupID
}

// NodeLoad is one node's measured load and replica counts.
type NodeLoad struct {
	Node     NodeID  `json:"node"`
	Reads    float64 `json:"reads_per_s"`
	Writes   float64 `json:"writes_per_s"`
	Replicas int     `json:"replicas"`
	Leaders  int     `json:"leaders"`
}

// DrainProgress is how far a node's drain got.
type DrainProgress struct {
	Node            NodeID  `json:"node"`
	StartedAtMs     int64   `json:"started_at_ms"`
	ReplicasAtStart int     `json:"replicas_at_start"`
	ReplicasLeft    int     `json:"replicas_left"`
	LeadersLeft     int     `json:"leaders_left"`
	Percent         float64 `json:"percent"`
	// EstimatedLeftMs is the time left at the pace so far (-1: unknown yet).
	EstimatedLeftMs int64 `json:"estimated_left_ms"`
	Done            bool  `json:"done"`
}

// What says what the action does, in words.
func (a BalanceAction) What() string {
	switch a.Kind {
	case BalanceMoveReplica:
		return fmt.Sprintf("move group %d's replica from node %d to node %d", a.Group, a.From, a.To)
	case BalanceSetLeader:
		return fmt.Sprintf("prefer node %d as group %d's leader (was node %d)", a.To, a.Group, a.From)
	case BalanceMoveSlot:
		return fmt.Sprintf("move hash slot %d from group %d to group %d", a.HashSlot, a.Group, a.ToGroup)
	case BalanceSplitGroup:
		return fmt.Sprintf("split group %d", a.Group)
	case BalanceMergeGroup:
		return fmt.Sprintf("merge group %d into group %d", a.Group, a.ToGroup)
	}
	return string(a.Kind)
}
