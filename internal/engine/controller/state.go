// Package controller is the controller group's replicated state machine: the
// cluster's intent. It holds the nodes, the HashToGroup table and its
// RouteRevision, and per slot group the desired peers (node → dragonboat
// replica id), ConfigEpoch and PreferredLeader.
//
// It holds intent, not fact: the live leader, term and membership of a group
// are observed from Raft, never read from here. Routing tables, replica
// placement, the preferred-leader reconciler (package controller/policy) and
// the tasks that change membership and ownership (package controller/tasks)
// all start from this state; the tasks' own state and the decision log
// live here too.
//
// The controller is its own dragonboat shard (ShardID) with a small,
// in-memory state machine; commands are versioned JSON (the controller is
// low-rate and its log is read by people when things go wrong). Every command
// is deterministic and idempotent: a retried proposal changes nothing twice.
//
// Concurrency: the state machine guards its state with a mutex; readers get
// deep copies (State.Clone), and OnChange observers get a copy after every
// applied command and must not block.
package controller

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// ShardID is the controller group's dragonboat shard id.
const ShardID uint64 = 1

// slotShardBase offsets slot group ids into dragonboat shard ids.
const slotShardBase uint64 = 1000

// ShardOf maps a slot group to its dragonboat shard id. It is the only place
// that knows the mapping.
func ShardOf(g slotstore.GroupID) uint64 { return slotShardBase + uint64(g) }

// GroupOfShard is ShardOf's inverse; ok is false for the controller and
// anything that is not a slot group shard.
func GroupOfShard(shard uint64) (slotstore.GroupID, bool) {
	if shard <= slotShardBase || shard > slotShardBase+uint64(^uint32(0)) {
		return 0, false
	}
	return slotstore.GroupID(shard - slotShardBase), true
}

// Node join states, as in slotstore.
const (
	NodeJoining  = slotstore.NodeJoining
	NodeActive   = slotstore.NodeActive
	NodeDraining = slotstore.NodeDraining
	NodeRemoved  = slotstore.NodeRemoved
)

// Group is the intent for one slot group.
type Group struct {
	ID slotstore.GroupID `json:"id"`
	// Peers maps each desired member node to its dragonboat replica id.
	// Replica ids are never reused within a group.
	Peers            map[slotstore.NodeID]uint64 `json:"peers"`
	ConfigEpoch      uint64                      `json:"config_epoch"`
	PreferredLeader  slotstore.NodeID            `json:"preferred_leader"`
	PreferredSetAtMs int64                       `json:"preferred_set_at_ms"`
	// ReadFence, when set, refuses the group's reads (readfence.go).
	ReadFence *ReadFence `json:"read_fence,omitempty"`
}

// PeerNodes lists the desired member nodes in ascending order.
func (g *Group) PeerNodes() []slotstore.NodeID {
	return sortedKeys(g.Peers)
}

// NodeOfReplica returns the desired peer that holds replica id r, if any.
// State.NodeOfReplica also knows the replicas moves are adding.
func (g *Group) NodeOfReplica(r uint64) (slotstore.NodeID, bool) {
	for n, id := range g.Peers {
		if id == r {
			return n, true
		}
	}
	return 0, false
}

// NodeOfReplica returns the node that holds replica r of group g: a desired
// peer's, or the new replica of a replica move. Raft makes that one a voter
// — and may make it the leader: the move hands leadership to it before it
// removes the old replica — before the move's commit names it a desired
// peer; a router that could not place it would see the group leaderless
// until then, and the move's own last steps could not reach the group.
// Replica ids are never reused within a group, so a move's new replica is
// its target node's for good, whatever became of the move.
func (s *State) NodeOfReplica(g slotstore.GroupID, r uint64) (slotstore.NodeID, bool) {
	grp, ok := s.Groups[g]
	if !ok {
		return 0, false
	}
	if n, ok := grp.NodeOfReplica(r); ok {
		return n, true
	}
	for _, t := range s.Tasks {
		if t.Kind == TaskReplicaMove && t.Group == g && t.NewReplicaID == r {
			return t.To, true
		}
	}
	return 0, false
}

// State is the controller's whole replicated state.
type State struct {
	ClusterID         string `json:"cluster_id"`
	Bootstrapped      bool   `json:"bootstrapped"`
	ReplicationFactor int    `json:"replication_factor"`
	// InitialGroupCount fixes every slot group's genesis ownership: the
	// hash slots routing.InitialTable(InitialGroupCount) gives it.
	InitialGroupCount int                          `json:"initial_group_count"`
	Nodes             map[slotstore.NodeID]*Node   `json:"nodes"`
	HashToGroup       []slotstore.GroupID          `json:"hash_to_group"`
	RouteRevision     uint64                       `json:"route_revision"`
	Groups            map[slotstore.GroupID]*Group `json:"groups"`
	NextReplicaID     uint64                       `json:"next_replica_id"`
	// NextGroupID is above every group id ever used; Retired lists the
	// retired groups (bounded), whose data every node removes.
	NextGroupID uint64              `json:"next_group_id,omitempty"`
	Retired     []slotstore.GroupID `json:"retired_groups,omitempty"`
	Decisions   []Decision          `json:"decisions"`           // bounded, oldest first
	DecisionSeq uint64              `json:"decision_seq"`        // decisions ever recorded
	Audit       []AuditRecord       `json:"audit,omitempty"`     // bounded, oldest first
	AuditSeq    uint64              `json:"audit_seq,omitempty"` // audit records ever recorded
	Tasks       map[uint64]*Task    `json:"tasks"`
	NextTaskID  uint64              `json:"next_task_id"`
	Balancer    BalancerIntent      `json:"balancer"`
	// Timing: the Raft timing each node reported it runs (timing.go).
	Timing       map[slotstore.NodeID]RaftTiming `json:"raft_timing,omitempty"`
	AppliedIndex uint64                          `json:"applied_index"`
	// PeerSecret is the cluster secret of peer RPC generated at bootstrap
	// (secret.go); empty when the operator gives one to every node.
	// Never shown by the API.
	PeerSecret string `json:"peer_secret,omitempty"`
	// Restored says where a cluster restored from a backup came from (nil:
	// founded new).
	Restored *Restored `json:"restored,omitempty"`
	// Tombstones are replicas that must never run again (recover.go), and
	// Recoveries the lost-quorum recoveries made (both bounded, oldest
	// first).
	Tombstones []Tombstone `json:"tombstones,omitempty"`
	Recoveries []Recovery  `json:"recoveries,omitempty"`
	// ControllerRecoveries are the recoveries of the controller group
	// itself (recovercontroller.go; bounded, oldest first).
	ControllerRecoveries []ControllerRecovery `json:"controller_recoveries,omitempty"`
	// HighWater is, per group, the highest applied index the controller
	// leader saw a replica report (highwater.go).
	HighWater map[slotstore.GroupID]HighWaterMark `json:"high_water,omitempty"`
	// Pins are the groups an operator's manual action pinned: the
	// balancer leaves them be until then (pins.go).
	Pins map[slotstore.GroupID]Pin `json:"pins,omitempty"`
	// ClusterVersion is the lowest release line every node runs, recorded
	// once they all do (clusterversion.go); zero until then.
	ClusterVersion slotstore.Version `json:"cluster_version,omitzero"`
}

// NewState is the empty, not yet bootstrapped state.
func NewState() *State {
	return &State{Nodes: map[slotstore.NodeID]*Node{}, Groups: map[slotstore.GroupID]*Group{}}
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := *s
	c.Nodes = make(map[slotstore.NodeID]*Node, len(s.Nodes))
	for id, n := range s.Nodes {
		nn := *n
		nn.Roles = append([]slotstore.NodeRole(nil), n.Roles...)
		c.Nodes[id] = &nn
	}
	c.HashToGroup = append([]slotstore.GroupID(nil), s.HashToGroup...)
	c.Retired = append([]slotstore.GroupID(nil), s.Retired...)
	c.Decisions = append([]Decision(nil), s.Decisions...)
	// Audit records are never changed once recorded: the copy shares them,
	// capped so that an append to either side cannot write into the other.
	c.Audit = s.Audit[:len(s.Audit):len(s.Audit)]
	c.Tombstones = s.Tombstones[:len(s.Tombstones):len(s.Tombstones)]
	c.Recoveries = s.Recoveries[:len(s.Recoveries):len(s.Recoveries)]
	c.ControllerRecoveries = s.ControllerRecoveries[:len(s.ControllerRecoveries):len(s.ControllerRecoveries)]
	c.HighWater = maps.Clone(s.HighWater)
	c.Pins = maps.Clone(s.Pins)
	c.Tasks = make(map[uint64]*Task, len(s.Tasks))
	for id, t := range s.Tasks {
		tt := *t
		tt.History = append([]PhaseRecord(nil), t.History...)
		c.Tasks[id] = &tt
	}
	if s.Timing != nil {
		c.Timing = make(map[slotstore.NodeID]RaftTiming, len(s.Timing))
		for id, t := range s.Timing {
			c.Timing[id] = t
		}
	}
	c.Groups = make(map[slotstore.GroupID]*Group, len(s.Groups))
	for id, g := range s.Groups {
		gg := *g
		gg.Peers = make(map[slotstore.NodeID]uint64, len(g.Peers))
		for n, r := range g.Peers {
			gg.Peers[n] = r
		}
		c.Groups[id] = &gg
	}
	return &c
}

// Table returns the HashToGroup table as a routing table.
func (s *State) Table() (*routing.Table, error) {
	if !s.Bootstrapped {
		return nil, fmt.Errorf("controller: not bootstrapped")
	}
	if len(s.HashToGroup) != slotstore.HashSlotCount {
		return nil, fmt.Errorf("controller: table has %d slots", len(s.HashToGroup))
	}
	var m [slotstore.HashSlotCount]slotstore.GroupID
	copy(m[:], s.HashToGroup)
	return routing.NewTable(s.RouteRevision, m)
}

// GenesisSlots are the hash slots group g owns at Raft index 0. A restored
// cluster has no genesis: its groups start from their images, at a log that
// begins past them (a replica added later is sent a snapshot), and the
// groups created later start empty.
func (s *State) GenesisSlots(g slotstore.GroupID) []slotstore.HashSlot {
	if s.Restored != nil {
		return nil
	}
	t, err := routing.InitialTable(s.InitialGroupCount)
	if err != nil {
		return nil
	}
	return t.SlotsOf(g)
}

// GroupIDs lists the groups in ascending order.
func (s *State) GroupIDs() []slotstore.GroupID {
	return sortedKeys(s.Groups)
}

// TaskIDs lists the kept tasks in ascending order.
func (s *State) TaskIDs() []uint64 {
	return sortedKeys(s.Tasks)
}

// TasksNewestFirst lists copies of the kept tasks, newest first.
func (s *State) TasksNewestFirst() []Task {
	ids := s.TaskIDs()
	out := make([]Task, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = *s.Tasks[id]
	}
	return out
}

// NodeIDs lists the nodes in ascending order.
func (s *State) NodeIDs() []slotstore.NodeID {
	return sortedKeys(s.Nodes)
}

// sortedKeys lists m's keys in ascending order (empty, not nil, for an
// empty m).
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// appendBounded appends x to list and keeps the newest limit entries;
// trimmed, the list is copied, so its array does not hold the dropped ones.
func appendBounded[T any](list []T, x T, limit int) []T {
	list = append(list, x)
	if over := len(list) - limit; over > 0 {
		list = append([]T(nil), list[over:]...)
	}
	return list
}
