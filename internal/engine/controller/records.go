package controller

import "github.com/slotmeta/slotmeta/internal/slotstore"

// The records of the controller's replicated state. They are the
// controller's own types, not the API's: their JSON is what every node
// restarts from and what a joining node receives (testdata/
// snapshot.golden.json holds it), so a field renamed in the API does not
// change replicated state. They have the API types' shapes today, and api.go
// maps one to the other in one place; a field added to one side and not the
// other stops that mapping from compiling.

// Node is a member of the cluster as the controller records it.
type Node struct {
	ID         slotstore.NodeID     `json:"id"`
	RaftAddr   string               `json:"raft_addr"`
	APIAddr    string               `json:"api_addr,omitempty"`
	PeerAddr   string               `json:"peer_addr,omitempty"`
	Roles      []slotstore.NodeRole `json:"roles,omitempty"`
	State      slotstore.NodeState  `json:"state,omitempty"`
	JoinedAtMs int64                `json:"joined_at_ms,omitempty"`
	// A drain's start and the replicas the node held then (its progress).
	DrainStartedAtMs int64 `json:"drain_started_at_ms,omitempty"`
	DrainReplicas    int   `json:"drain_replicas,omitempty"`
}

// Task is a controller task — a replica move, a hash-slot migration, a
// group creation, split or merge — with its history.
type Task struct {
	ID       uint64              `json:"id"`
	Kind     slotstore.TaskKind  `json:"kind"`
	Group    slotstore.GroupID   `json:"group"`
	From     slotstore.NodeID    `json:"from_node,omitempty"`
	To       slotstore.NodeID    `json:"to_node,omitempty"`
	HashSlot *slotstore.HashSlot `json:"hash_slot,omitempty"` // slot migrations: the slot, from Group to ToGroup
	ToGroup  slotstore.GroupID   `json:"to_group,omitempty"`
	// Splits and merges: the hash slots still to move from Group to
	// ToGroup, HashSlot (the one moving now) first; Moved counts those done.
	HashSlots []slotstore.HashSlot `json:"hash_slots,omitempty"`
	Moved     int                  `json:"moved,omitempty"`
	// Live moves: the slot keeps taking writes while it is copied and
	// caught up from the source's change log; Cursor is how far that log
	// was applied to the target.
	Live   bool          `json:"live,omitempty"`
	Cursor *ChangeCursor `json:"cursor,omitempty"`
	// CopiedTo is how far the copy phase imported the slot's rows: the
	// last row key copied (a copy goes on from it, in bounded steps, after
	// a round or a failover; nil: from the start). Cleared when the phase
	// ends and when an aborted move resumes (its copied rows were dropped).
	CopiedTo []byte `json:"copied_to,omitempty"`
	// SnapshotBytes is, in a replica move's catch-up, the bytes of Raft
	// snapshots the learner's node said it had received when last recorded:
	// a change is progress (a large group's snapshot takes longer than the
	// phase timeout to send). Cleared when the phase ends.
	SnapshotBytes uint64               `json:"snapshot_bytes,omitempty"`
	OldReplicaID  uint64               `json:"old_replica_id,omitempty"`
	NewReplicaID  uint64               `json:"new_replica_id,omitempty"`
	Phase         slotstore.TaskPhase  `json:"phase"`
	Status        slotstore.TaskStatus `json:"status"`
	Attempt       int                  `json:"attempt"`
	Error         string               `json:"error,omitempty"`
	History       []PhaseRecord        `json:"history"`
	CreatedAtMs   int64                `json:"created_at_ms"`
	UpdatedAtMs   int64                `json:"updated_at_ms"`
}

// PhaseRecord is what a task observed when it finished a phase: the Raft
// membership of the group at that moment.
type PhaseRecord struct {
	Phase          slotstore.TaskPhase `json:"phase"`
	AtMs           int64               `json:"at_ms"`
	Voters         []uint64            `json:"voters"`   // replica ids
	Learners       []uint64            `json:"learners"` // replica ids
	ConfigChangeID uint64              `json:"config_change_id"`
	Note           string              `json:"note,omitempty"`
}

// ChangeCursor is a position in a hash slot's change log: the Raft index of
// the source group's entry and the change's sequence within it.
type ChangeCursor struct {
	Index uint64 `json:"index"`
	Seq   uint32 `json:"seq"`
}

// Decision is one entry of the decision log: what the reconciler, the
// balancer or a task decided, and the inputs it decided from.
type Decision struct {
	Seq             uint64                 `json:"seq,omitempty"` // State.DecisionSeq when recorded (0: before it was kept)
	AtMs            int64                  `json:"at_ms"`
	Group           slotstore.GroupID      `json:"group"`
	Kind            slotstore.DecisionKind `json:"kind"`
	Reason          slotstore.Reason       `json:"reason"`
	Detail          string                 `json:"detail,omitempty"`
	Leader          slotstore.NodeID       `json:"leader"`
	Term            uint64                 `json:"term"`
	PreferredLeader slotstore.NodeID       `json:"preferred_leader"`
	TargetLag       uint64                 `json:"target_lag"`
	TargetReportAge int64                  `json:"target_report_age_ms"`
	Observer        slotstore.NodeID       `json:"observer"`
}

// AuditRecord is one admin action of the audit trail.
type AuditRecord struct {
	Seq     uint64                 `json:"seq"`
	AtMs    int64                  `json:"at_ms"`
	Who     string                 `json:"who"`
	Role    string                 `json:"role"`
	Via     string                 `json:"via"`
	Source  string                 `json:"source"`
	Node    slotstore.NodeID       `json:"node"`
	Action  string                 `json:"action"`
	Target  string                 `json:"target"`
	Outcome slotstore.AuditOutcome `json:"outcome"`
	Status  int                    `json:"status"`
	Code    slotstore.Code         `json:"code,omitempty"`
	Detail  string                 `json:"detail,omitempty"`
}
