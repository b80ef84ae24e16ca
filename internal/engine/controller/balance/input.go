package balance

import (
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Node is a registered node as the planner sees it.
type Node struct {
	ID        slotstore.NodeID
	State     slotstore.NodeState // active, draining, … (removed nodes are left out)
	Reachable bool
	// DiskLow: the node reports its disk low (package diskguard): it takes
	// no replica and no leadership the planner would give it — it refuses
	// writes, and under half its reserve stores nothing others send.
	DiskLow bool
}

// Group is a slot group as the planner sees it.
type Group struct {
	ID    slotstore.GroupID
	Peers []slotstore.NodeID // desired peers
	// Leader is the observed leader (0: none); PreferredLeader the intent.
	Leader, PreferredLeader slotstore.NodeID
	PreferredSetAt          time.Time
	Slots                   []slotstore.HashSlot
	// Quorum: a majority of the desired peers are live voters.
	Quorum bool
	// Busy: a task works on the group (source or target).
	Busy bool
	// Pinned: an operator's manual action pinned the group (controller
	// pins.go): nothing but a drain, or the rebuild of a replica that
	// failed to start, moves it.
	Pinned bool
	// Failed: desired peers whose node reports it could not start its
	// replica of the group (replicas/failures.go): the replica is rebuilt
	// on another node.
	Failed []slotstore.NodeID
}

// Load is a measured rate, in operations per second.
type Load struct {
	Reads, Writes float64
}

// Total is what the planner balances: reads and writes alike.
func (l Load) Total() float64 { return l.Reads + l.Writes }

// SlotMove is a hash slot moved earlier (by anyone), for hysteresis.
type SlotMove struct {
	Slot     slotstore.HashSlot
	From, To slotstore.GroupID
	At       time.Time
}

// ReplicaMove is a replica move under way, from node From to node To.
type ReplicaMove struct {
	Group    slotstore.GroupID
	From, To slotstore.NodeID
}

// Input is the cluster at one moment.
type Input struct {
	Now    time.Time
	Nodes  []Node
	Groups []Group
	// SlotLoad is every hash slot's load, cluster-wide; all zero when
	// nothing was measured yet.
	SlotLoad [slotstore.HashSlotCount]Load
	// Running: the balancing tasks running now (replica moves, slot moves,
	// splits, merges — the ones the budget counts).
	Running int
	// SlotTasks: the tasks that move hash slots now (the controller allows
	// MaxSlotMoves at once).
	SlotTasks int
	// GroupTasks: splits and merges running now.
	GroupTasks int
	// Moving: the replica moves running now, which the replica counts
	// take as done (the desired peers change only at their commit).
	Moving      []ReplicaMove
	RecentMoves []SlotMove
	// DrainOnly plans drains and nothing else (the balancer is paused or
	// turned off: drains were asked for by an operator and go on).
	DrainOnly bool
	// InPlaceGated says why a replica may not be rebuilt in place (a move
	// from a node to itself) — the cluster version does not allow it yet,
	// a rolling upgrade in progress — or is empty when it may.
	InPlaceGated      string
	ReplicationFactor int
	InitialGroups     int
}

// Config tunes the planner. Zero values take the defaults.
type Config struct {
	MaxTasks      int           // balancing tasks at once (default 2)
	MaxSlotTasks  int           // slot-moving tasks at once (default 4, the controller's bound)
	ReplicaSkew   int           // tolerated replicas between the fullest and emptiest node (default 1)
	LeaderSkew    int           // tolerated leaders between the nodes leading most and fewest (default 1)
	LeaderSettle  time.Duration // a preferred leader set this recently counts as the leader (default 30 s)
	SlotSkew      int           // tolerated hash slots between groups when no load is measured (default 2)
	LoadSkew      float64       // the busiest group may carry this times the mean (default 1.25)
	MinLoad       float64       // ops/s below which a group's load is not balanced (default 50)
	GroupsPerNode int           // groups wanted per active data node beyond one replica set (default 1; < 0: the count is left alone)
	MaxGroups     int           // the group count the planner never exceeds (default 64)
	SlotCooldown  time.Duration // a slot does not move back within it (default 10 min)
}

// positiveOr is v when it is above zero, else def: a zero or negative
// setting takes its default.
func positiveOr[T int | float64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Defaults returns c with every zero field set to its default.
func (c Config) Defaults() Config {
	c.MaxTasks = positiveOr(c.MaxTasks, 2)
	c.MaxSlotTasks = positiveOr(c.MaxSlotTasks, 4)
	c.ReplicaSkew = positiveOr(c.ReplicaSkew, 1)
	c.LeaderSkew = positiveOr(c.LeaderSkew, 1)
	c.LeaderSettle = positiveOr(c.LeaderSettle, 30*time.Second)
	c.SlotSkew = positiveOr(c.SlotSkew, 2)
	if c.LoadSkew <= 1 {
		c.LoadSkew = 1.25
	}
	c.MinLoad = positiveOr(c.MinLoad, 50)
	if c.GroupsPerNode == 0 { // < 0: leave the group count alone
		c.GroupsPerNode = 1
	}
	c.MaxGroups = positiveOr(c.MaxGroups, 64)
	c.SlotCooldown = positiveOr(c.SlotCooldown, 10*time.Minute)
	return c
}

// Action kinds and reasons (the domain's, see slotstore.BalanceAction).
const (
	MoveReplica                    = slotstore.BalanceMoveReplica
	SetLeader                      = slotstore.BalanceSetLeader
	MoveSlot                       = slotstore.BalanceMoveSlot
	SplitGroup                     = slotstore.BalanceSplitGroup
	MergeGroup                     = slotstore.BalanceMergeGroup
	ReasonDrain   slotstore.Reason = "drain"
	ReasonRebuild slotstore.Reason = "replica_failed"
	ReasonCount   slotstore.Reason = "replica_count"
	ReasonLeader  slotstore.Reason = "leader_count"
	ReasonLoad    slotstore.Reason = "slot_load"
	// ReasonHotSlot: balancing waits because a hash slot alone carries
	// more than a group may and nothing else moves the load (Plan.Hot).
	ReasonHotSlot slotstore.Reason = "hot_slot"
	ReasonSlots   slotstore.Reason = "slot_count"
	ReasonGrow    slotstore.Reason = "scale_out"
	ReasonShrink  slotstore.Reason = "scale_in"
)

// Action is one step the planner proposes; Plan is a whole plan.
type (
	Action = slotstore.BalanceAction
	Plan   = slotstore.BalancePlan
)
