package controller

import (
	"encoding/json"
	"fmt"
	"sort"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/routing"
)

// commandVersion is the "v" of every controller command.
const commandVersion = 1

// Command is the JSON envelope of a controller command: exactly one body is set.
type Command struct {
	V            int                  `json:"v"`
	TimeMs       int64                `json:"time_ms"`
	Bootstrap    *Bootstrap           `json:"bootstrap,omitempty"`
	RegisterNode *RegisterNode        `json:"register_node,omitempty"`
	SetNodeState *SetNodeState        `json:"set_node_state,omitempty"`
	SetPreferred *SetPreferred        `json:"set_preferred,omitempty"`
	Decision     *Decision            `json:"decision,omitempty"`
	CreateMove   *CreateMove          `json:"create_move,omitempty"`
	AdvanceTask  *AdvanceTask         `json:"advance_task,omitempty"`
	CancelTask   *CancelTask          `json:"cancel_task,omitempty"`
	SlotMigrate  *CreateSlotMigration `json:"slot_migrate,omitempty"`
	CreateGroup  *CreateGroup         `json:"create_group,omitempty"`
	RetireGroup  *RetireGroup         `json:"retire_group,omitempty"`
	CreateSplit  *CreateSplit         `json:"create_split,omitempty"`
	CreateMerge  *CreateMerge         `json:"create_merge,omitempty"`
	DrainNode    *DrainNode           `json:"drain_node,omitempty"`
	RemoveNode   *RemoveNode          `json:"remove_node,omitempty"`
	SetBalancer  *SetBalancer         `json:"set_balancer,omitempty"`
	Audit        *AuditRecord         `json:"audit,omitempty"`
	RaftTiming   *SetRaftTiming       `json:"raft_timing,omitempty"`
}

// SetPreferred sets a group's preferred leader (an intent with a time).
type SetPreferred struct {
	Group slotstore.GroupID `json:"group"`
	Node  slotstore.NodeID  `json:"node"`
}

// Decision is one reconciliation decision (the domain type).
type Decision = slotstore.Decision

// MaxDecisions bounds the decision log; the oldest entries go first.
const MaxDecisions = 500

// AuditRecord is one admin action of the audit trail (the domain type).
type AuditRecord = slotstore.AuditRecord

// MaxAudit bounds the audit trail; the oldest records go first.
const MaxAudit = 1000

// RegisterNode records a node that joins a running cluster, in state
// joining. Registering the same node again is a no-op that succeeds; an id or
// Raft address already used by another node is a conflict.
type RegisterNode struct {
	Node Node `json:"node"`
}

// SetNodeState moves a registered node to another join state.
type SetNodeState struct {
	ID    slotstore.NodeID `json:"id"`
	State string           `json:"state"`
}

// Bootstrap founds the cluster: its nodes, the first HashToGroup table and
// the initial placement of every group. Only the first one applies; a later
// one is answered with the cluster as it was founded.
type Bootstrap struct {
	ClusterID         string `json:"cluster_id"`
	GroupCount        int    `json:"group_count"`
	ReplicationFactor int    `json:"replication_factor"`
	Nodes             []Node `json:"nodes"`
}

// Result is the JSON answer of a controller command.
type Result struct {
	OK      bool           `json:"ok"`
	Code    slotstore.Code `json:"code,omitempty"` // why not, when !OK
	TaskID  uint64         `json:"task_id,omitempty"`
	Message string         `json:"message,omitempty"`
}

// EncodeCommand encodes c with the current version.
func EncodeCommand(c Command) ([]byte, error) {
	c.V = commandVersion
	return json.Marshal(c)
}

// DecodeCommand decodes and checks the envelope.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("controller: malformed command: %w", err)
	}
	if c.V != commandVersion {
		return c, fmt.Errorf("controller: unknown command version %d", c.V)
	}
	bodies := 0
	for _, set := range []bool{c.Bootstrap != nil, c.RegisterNode != nil, c.SetNodeState != nil, c.SetPreferred != nil, c.Decision != nil,
		c.CreateMove != nil, c.AdvanceTask != nil, c.CancelTask != nil, c.SlotMigrate != nil, c.CreateGroup != nil, c.RetireGroup != nil,
		c.CreateSplit != nil, c.CreateMerge != nil, c.DrainNode != nil, c.RemoveNode != nil, c.SetBalancer != nil, c.Audit != nil,
		c.RaftTiming != nil} {
		if set {
			bodies++
		}
	}
	if bodies != 1 {
		return c, fmt.Errorf("controller: command has %d bodies, want 1", bodies)
	}
	return c, nil
}

// Validate checks a bootstrap request before it is proposed or applied.
func (b *Bootstrap) Validate() error {
	if b.ClusterID == "" {
		return fmt.Errorf("controller: empty cluster id")
	}
	if b.GroupCount < 1 || b.GroupCount > slotstore.HashSlotCount {
		return fmt.Errorf("controller: group count %d outside 1..%d", b.GroupCount, slotstore.HashSlotCount)
	}
	if len(b.Nodes) == 0 {
		return fmt.Errorf("controller: no nodes")
	}
	if b.ReplicationFactor < 1 {
		return fmt.Errorf("controller: replication factor %d", b.ReplicationFactor)
	}
	seen := map[slotstore.NodeID]bool{}
	for _, n := range b.Nodes {
		if n.ID == 0 || seen[n.ID] {
			return fmt.Errorf("controller: node id %d is zero or repeated", n.ID)
		}
		if n.RaftAddr == "" {
			return fmt.Errorf("controller: node %d has no raft address", n.ID)
		}
		seen[n.ID] = true
	}
	return nil
}

// apply applies c to s at Raft index; it returns the command's result.
func apply(s *State, c Command) Result {
	switch {
	case c.Bootstrap != nil:
		return applyBootstrap(s, c.Bootstrap, c.TimeMs)
	case c.RegisterNode != nil:
		return applyRegisterNode(s, c.RegisterNode, c.TimeMs)
	case c.SetNodeState != nil:
		return applySetNodeState(s, c.SetNodeState)
	case c.RaftTiming != nil:
		return applySetRaftTiming(s, c.RaftTiming)
	case c.SlotMigrate != nil:
		return applyCreateSlotMigration(s, c.SlotMigrate, c.TimeMs)
	case c.CreateMove != nil:
		return applyCreateMove(s, c.CreateMove, c.TimeMs)
	case c.CreateGroup != nil:
		return applyCreateGroup(s, c.CreateGroup, c.TimeMs)
	case c.RetireGroup != nil:
		return applyRetireGroup(s, c.RetireGroup)
	case c.CreateSplit != nil:
		return applyCreateSplit(s, c.CreateSplit, c.TimeMs)
	case c.CreateMerge != nil:
		return applyCreateMerge(s, c.CreateMerge, c.TimeMs)
	case c.AdvanceTask != nil:
		return applyAdvanceTask(s, c.AdvanceTask, c.TimeMs)
	case c.CancelTask != nil:
		return applyCancelTask(s, c.CancelTask, c.TimeMs)
	case c.DrainNode != nil:
		return applyDrainNode(s, c.DrainNode, c.TimeMs)
	case c.RemoveNode != nil:
		return applyRemoveNode(s, c.RemoveNode)
	case c.SetBalancer != nil:
		return applySetBalancer(s, c.SetBalancer, c.TimeMs)
	case c.SetPreferred != nil:
		return applySetPreferred(s, c.SetPreferred, c.TimeMs)
	case c.Audit != nil:
		a := c.Audit.Bounded()
		s.AuditSeq++
		a.Seq, a.AtMs = s.AuditSeq, c.TimeMs
		s.Audit = append(s.Audit, a)
		if over := len(s.Audit) - MaxAudit; over > 0 {
			s.Audit = append([]AuditRecord(nil), s.Audit[over:]...)
		}
		return Result{OK: true, TaskID: a.Seq}
	case c.Decision != nil:
		d := *c.Decision
		d.AtMs = c.TimeMs
		s.Decisions = append(s.Decisions, d)
		if over := len(s.Decisions) - MaxDecisions; over > 0 {
			s.Decisions = append([]Decision(nil), s.Decisions[over:]...)
		}
		s.DecisionSeq++
		return Result{OK: true}
	}
	return Result{Message: "empty command"}
}

func applyBootstrap(s *State, b *Bootstrap, timeMs int64) Result {
	if s.Bootstrapped {
		return Result{OK: false, Message: "already bootstrapped as " + s.ClusterID}
	}
	if err := b.Validate(); err != nil {
		return Result{Message: err.Error()}
	}
	table, err := routing.InitialTable(b.GroupCount)
	if err != nil {
		return Result{Message: err.Error()}
	}
	nodes := append([]Node(nil), b.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	rf := min(b.ReplicationFactor, len(nodes))
	var maxID slotstore.NodeID
	for i := range nodes {
		n := nodes[i]
		n.State = NodeActive
		n.JoinedAtMs = timeMs
		if len(n.Roles) == 0 {
			n.Roles = []string{slotstore.RoleController, slotstore.RoleData}
		}
		s.Nodes[n.ID] = &n
		maxID = max(maxID, n.ID)
	}
	groups := table.Groups()
	s.HashToGroup = append([]slotstore.GroupID(nil), groups[:]...)
	s.RouteRevision = table.Revision()
	// Placement: group g takes rf consecutive nodes starting at (g-1) mod N,
	// so replicas and initial preferred leaders spread evenly.
	for g := 1; g <= b.GroupCount; g++ {
		grp := &Group{ID: slotstore.GroupID(g), Peers: map[slotstore.NodeID]uint64{}, ConfigEpoch: 1, PreferredSetAtMs: timeMs}
		for i := 0; i < rf; i++ {
			n := nodes[(g-1+i)%len(nodes)]
			grp.Peers[n.ID] = uint64(n.ID) // initial replicas use the node id
		}
		grp.PreferredLeader = nodes[(g-1)%len(nodes)].ID
		s.Groups[grp.ID] = grp
	}
	s.ClusterID = b.ClusterID
	s.ReplicationFactor = rf
	s.InitialGroupCount = b.GroupCount
	s.NextReplicaID = uint64(maxID) + 1
	s.Bootstrapped = true
	return Result{OK: true}
}

func refuse(code slotstore.Code, format string, args ...any) Result {
	return Result{Code: code, Message: fmt.Sprintf(format, args...)}
}

func applyRegisterNode(s *State, r *RegisterNode, timeMs int64) Result {
	if !s.Bootstrapped {
		return refuse(slotstore.CodeRouteNotReady, "cluster is not bootstrapped")
	}
	n := r.Node
	if n.ID == 0 || n.RaftAddr == "" {
		return refuse(slotstore.CodeInvalidArgument, "node needs an id and a raft address")
	}
	if old, ok := s.Nodes[n.ID]; ok {
		if old.RaftAddr != n.RaftAddr {
			return refuse(slotstore.CodeConflict, "node %d is registered with raft address %s", n.ID, old.RaftAddr)
		}
		if old.State == NodeRemoved {
			return refuse(slotstore.CodeConflict, "node %d was removed; a removed id is never reused", n.ID)
		}
		return Result{OK: true, Message: "already registered"}
	}
	for _, other := range s.Nodes {
		if other.RaftAddr == n.RaftAddr {
			return refuse(slotstore.CodeConflict, "raft address %s belongs to node %d", n.RaftAddr, other.ID)
		}
	}
	n.State = NodeJoining
	n.JoinedAtMs = timeMs
	n.Roles = []string{slotstore.RoleData}
	s.Nodes[n.ID] = &n
	return Result{OK: true}
}

func applySetNodeState(s *State, r *SetNodeState) Result {
	n, ok := s.Nodes[r.ID]
	if !ok {
		return refuse(slotstore.CodeNotFound, "node %d is not registered", r.ID)
	}
	switch r.State {
	case NodeJoining, NodeActive, NodeDraining, NodeRemoved:
	default:
		return refuse(slotstore.CodeInvalidArgument, "unknown node state %q", r.State)
	}
	if n.State == NodeRemoved && r.State != NodeRemoved {
		return refuse(slotstore.CodeConflict, "node %d was removed", r.ID)
	}
	if n.State == NodeDraining && r.State == NodeActive {
		// A registration finished again (a retried join) does not undo a drain.
		return Result{OK: true, Message: "draining; stays draining"}
	}
	n.State = r.State
	return Result{OK: true}
}

func applySetPreferred(s *State, r *SetPreferred, timeMs int64) Result {
	g, ok := s.Groups[r.Group]
	if !ok {
		return refuse(slotstore.CodeNotFound, "group %d does not exist", r.Group)
	}
	if _, ok := g.Peers[r.Node]; !ok {
		return refuse(slotstore.CodeConflict, "node %d is not a desired peer of group %d", r.Node, r.Group)
	}
	g.PreferredLeader = r.Node
	g.PreferredSetAtMs = timeMs
	return Result{OK: true}
}
