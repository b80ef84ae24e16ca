package slotstore

// Observed status: what the nodes report about their replicas, aggregated by
// the controller leader, and shown beside the controller's intent. These are
// facts as of ObservedAtMs, never filled in from intent: a group whose
// leader nobody reports has Leader 0.

// ReplicaRole is a replica's place in its group's Raft membership.
type ReplicaRole string

// Replica roles as observed in a group's Raft membership.
const (
	RoleVoter   ReplicaRole = "voter"
	RoleLearner ReplicaRole = "learner" // a non-voting replica (catching up, or a follower of the controller)
	RoleUnknown ReplicaRole = "unknown" // reported by a node, but not in the membership the leader reported
)

// ReplicaStatus is one node's report about one of its replicas.
type ReplicaStatus struct {
	Group             GroupID `json:"group"`
	ReplicaID         uint64  `json:"replica_id"`
	Node              NodeID  `json:"node"`
	AppliedIndex      uint64  `json:"applied_index"`
	LogFirst          uint64  `json:"log_first"`
	LogLast           uint64  `json:"log_last"`
	LeaderReplica     uint64  `json:"leader_replica"` // this replica's view of the leader (0: none)
	Term              uint64  `json:"term"`
	NonVoting         bool    `json:"non_voting"`
	ConfigChangeIndex uint64  `json:"config_change_index"`
	// Set only by the leader's replica: the membership it applies.
	Voters         map[uint64]string `json:"voters,omitempty"`     // replica id → raft address
	NonVoters      map[uint64]string `json:"non_voters,omitempty"` // replica id → raft address
	ConfigChangeID uint64            `json:"config_change_id,omitempty"`
	// Set only by the leader's replica: for each other replica of the
	// membership, how long ago this node last received a Raft message from
	// it (-1: never). The leader's own view of who answers it.
	HeardAgoMs map[uint64]int64 `json:"heard_ago_ms,omitempty"`
	// Set only by the leader's replica: for each other replica of the
	// membership that leaves a request of this node unanswered, how long the
	// oldest has waited (absent: none waits — also in a quiesced group,
	// which sends nothing).
	UnansweredMs map[uint64]int64 `json:"unanswered_ms,omitempty"`
	// The replica's last disruption as its node saw it ("" none): restarted
	// (from its own Raft state), lost_leadership (stopped leading without a
	// transfer away having been asked), no_leader (knew no leader for longer
	// than an election should take); and how long ago it ended.
	Disruption     Disruption `json:"disruption,omitempty"`
	DisruptedAgoMs int64      `json:"disrupted_ago_ms,omitempty"`
	// SnapshotBytes is how many bytes of Raft snapshots this node has
	// received for the replica since it started: a learner receiving its
	// group's data shows its progress here long before its log moves.
	SnapshotBytes uint64 `json:"snapshot_bytes,omitempty"`
}

// NodeStatus is one node's report.
type NodeStatus struct {
	Node     NodeID          `json:"node"`
	AtMs     int64           `json:"at_ms"` // when the node produced it (its clock)
	Replicas []ReplicaStatus `json:"replicas"`
	// SlotReads and SlotWrites are the operations this node's API served
	// per hash slot since it started (package heat), absent while none.
	SlotReads  SlotCounts `json:"slot_reads,omitempty"`
	SlotWrites SlotCounts `json:"slot_writes,omitempty"`
	// Failed are the replicas the controller places on this node that
	// could not start here (absent while none): the node runs without them.
	Failed []ReplicaFailure `json:"failed,omitempty"`
	// Version is the release line the node's binary runs (package
	// clusterversion); absent from a node of a release before cluster
	// versions (it runs 0.1).
	Version Version `json:"version,omitzero"`
	// DiskLow: the node's disk is under its reserve (package diskguard);
	// it refuses the writes it would lead.
	DiskLow bool `json:"disk_low,omitempty"`
}

// ReplicaFailure is a replica its node could not start: the engine refused
// it or panicked while loading it (a damaged Raft log or state, say). The
// node goes on without it and serves its other groups; the group is served
// by its other replicas. A failure the engine panicked on is not tried
// again by that process: moving the replica to another node rebuilds it
// there from a snapshot (and removes what it left here).
type ReplicaFailure struct {
	Group     GroupID `json:"group"`
	ReplicaID uint64  `json:"replica_id"`
	// Reason is the engine's error, or its panic, on one line.
	Reason string `json:"reason"`
	// Panicked: the engine panicked loading it, or processes ended while
	// it replayed its log (the crash-loop breaker); the node does not try
	// again (a returned error is tried again every reconcile round).
	Panicked bool `json:"panicked"`
	// Fenced: not a start that failed — a state check found the replica's
	// rows differing from the majority's and its node stopped it (issue
	// 52); it is not started again until it is moved off and rebuilt.
	Fenced   bool  `json:"fenced,omitempty"`
	Attempts int   `json:"attempts"`
	SinceMs  int64 `json:"since_ms"` // the first failed attempt (the node's clock)
}

// ReplicaView is one replica of a group as the console and API show it.
type ReplicaView struct {
	Node         NodeID      `json:"node"`
	ReplicaID    uint64      `json:"replica_id"`
	Role         ReplicaRole `json:"role"`
	Desired      bool        `json:"desired"` // the node is a desired peer of the group
	AppliedIndex uint64      `json:"applied_index"`
	LogFirst     uint64      `json:"log_first"`
	LogLast      uint64      `json:"log_last"`
	Lag          uint64      `json:"lag"` // leader's applied index minus this one's (0 for the leader)
	// Term is the Raft term the replica was in when its node last
	// reported; after a leader change it lags the group's until then.
	Term        uint64 `json:"term,omitempty"`
	ReportAgeMs int64  `json:"report_age_ms"`
	// HeardAgoMs is how long ago the group leader's node last received a
	// Raft message from this replica, as of now (the leader's report plus
	// its age); 0 for the leader itself, -1 when the leader's report does
	// not say (no leader report, or never heard).
	HeardAgoMs int64 `json:"heard_ago_ms"`
	// UnansweredMs is how long the oldest Raft request (heartbeat or
	// replicate) the leader's node sent to this replica has waited for an
	// answer, as of now; 0 when none waits — the leader itself, a replica
	// that answers, and every replica of a quiesced group, which sends
	// nothing — and -1 when the leader's report does not say.
	UnansweredMs int64 `json:"unanswered_ms"`
	// Live: a voter whose node reports and that answers the leader (it was
	// heard at least once and leaves no request unanswered for long).
	Live bool `json:"live"`
	// The replica's last disruption as its node reported it (see
	// ReplicaStatus); "" when none.
	Disruption     Disruption `json:"disruption,omitempty"`
	DisruptedAgoMs int64      `json:"disrupted_ago_ms,omitempty"`
	// SnapshotBytes: the bytes of Raft snapshots the replica's node has
	// received for it since the node started (see ReplicaStatus).
	SnapshotBytes uint64 `json:"snapshot_bytes,omitempty"`
	// Failed is why the replica's node could not start it (ReplicaFailure:
	// the engine's reason); "" while it runs or is not reported. Fenced:
	// a state check fenced it instead (Failed says why).
	Failed string `json:"failed,omitempty"`
	Fenced bool   `json:"fenced,omitempty"`
}

// Disruption is a kind of disruption a node reports about its own replicas.
type Disruption string

// Disruption kinds.
const (
	DisruptionRestarted      Disruption = "restarted"       // started again from its own Raft state
	DisruptionLostLeadership Disruption = "lost_leadership" // stopped leading without a transfer away having been asked
	DisruptionNoLeader       Disruption = "no_leader"       // knew no leader for longer than an election takes
)

// Reason is a machine-readable reason: why a transfer is blocked, why the
// reconciler decided as it did, why the balancer acts. The API, the decision
// log and the console show it as it is.
type Reason string

// GroupHealth is a group's health as observed.
type GroupHealth string

// Group health as observed.
const (
	GroupHealthy         GroupHealth = "healthy"
	GroupUnderReplicated GroupHealth = "under_replicated" // fewer live voters than desired peers
	GroupNoLeader        GroupHealth = "no_leader"
)

// Reachability is a node's health as the controller leader observes it.
type Reachability string

// Node health as the controller leader observes it.
const (
	NodeReachable   Reachability = "reachable"
	NodeUnreachable Reachability = "unreachable" // no status report for longer than a few report intervals
	NodeUnknown     Reachability = "unknown"     // no report yet since this controller leader took over
)

// NodeHealth is one node's reachability as the controller leader sees it.
type NodeHealth struct {
	Node   NodeID       `json:"node"`
	Health Reachability `json:"health"`
	// ReportAgeMs is the age of the node's latest status report (-1: none).
	ReportAgeMs int64 `json:"report_age_ms"`
	// HealthyForMs is how long the node has reported without a gap since
	// it was last unreachable (-1 while unreachable or unknown; since the
	// controller leader took over when it never saw a gap).
	HealthyForMs int64  `json:"healthy_for_ms"`
	Aggregator   NodeID `json:"aggregator"` // the controller leader that observed it
	// Version is the release line the node reported it runs (zero: no
	// report, or a node of a release before cluster versions).
	Version Version `json:"version,omitzero"`
}

// DesiredPeer is one node of a group's intended membership.
type DesiredPeer struct {
	Node      NodeID `json:"node"`
	ReplicaID uint64 `json:"replica_id"`
}

// GroupView is one slot group: the controller's intent and the observed
// fact side by side.
type GroupView struct {
	ID        GroupID `json:"id"`
	HashSlots int     `json:"hash_slots"`
	// Intent (the controller's replicated state).
	DesiredPeers     []DesiredPeer `json:"desired_peers"`
	ConfigEpoch      uint64        `json:"config_epoch"`
	PreferredLeader  NodeID        `json:"preferred_leader"`
	PreferredSetAtMs int64         `json:"preferred_set_at_ms"`
	// Fact (observed). Leader is 0 when no replica reports a leader.
	Leader           NodeID        `json:"leader"`
	Term             uint64        `json:"term"`
	Voters           []NodeID      `json:"voters"`
	Learners         []NodeID      `json:"learners"`
	ConfigChangeID   uint64        `json:"config_change_id"`
	Replicas         []ReplicaView `json:"replicas"`
	Health           GroupHealth   `json:"health"`
	LiveVoters       int           `json:"live_voters"`    // voters that report and that the leader hears
	ObservedBy       NodeID        `json:"observed_by"`    // the node whose report gave Leader/Term/membership
	ObservedAtMs     int64         `json:"observed_at_ms"` // when that report was received
	ObservationAgeMs int64         `json:"observation_age_ms"`
	Aggregator       NodeID        `json:"aggregator"` // the controller leader that aggregated the reports
	// LastCheck is the group's last state check on this controller leader
	// (nil: none since it took the lead). ReadsFenced, when set, says why
	// the group's reads are refused: a check found its replicas differing
	// with no majority (lifted by a check that finds them agreeing).
	LastCheck   *GroupCheck `json:"last_check,omitempty"`
	ReadsFenced string      `json:"reads_fenced,omitempty"`
}

// Blocker is one reason a leader transfer must not happen now.
type Blocker struct {
	Reason Reason `json:"reason"` // machine-readable, e.g. target_lagging
	Detail string `json:"detail"`
}

// Preflight is the verdict on moving a group's leadership to a node: the
// checks a transfer runs, with nothing done.
type Preflight struct {
	Group           GroupID   `json:"group"`
	Target          NodeID    `json:"target_node"`
	OK              bool      `json:"ok"`
	Blockers        []Blocker `json:"blockers"`
	Leader          NodeID    `json:"leader"`
	Term            uint64    `json:"term"`
	TargetLag       uint64    `json:"target_lag"`
	TargetReportAge int64     `json:"target_report_age_ms"` // -1: never reported
	ObservedBy      NodeID    `json:"observed_by"`
	ObservationAge  int64     `json:"observation_age_ms"`
}

// TransferResult is a completed leader transfer.
type TransferResult struct {
	Group          GroupID `json:"group"`
	PreviousLeader NodeID  `json:"previous_leader"`
	Leader         NodeID  `json:"leader"`
	Term           uint64  `json:"term"`
	ObservedAtMs   int64   `json:"observed_at_ms"` // when the new leader was observed
	TookMs         int64   `json:"took_ms"`
}

// DecisionKind is what an entry of the decision log did, or why it did not.
type DecisionKind string

// Decision kinds: the preferred-leader reconciler's (transfer … transfer_failed),
// a task's phase step, the balancer's (balance … balance_held).
const (
	DecisionTransfer        DecisionKind = "transfer"         // a leader transfer to the preferred node, about to be made
	DecisionSkip            DecisionKind = "skip"             // no transfer: Reason says which check failed
	DecisionTransferred     DecisionKind = "transferred"      // the transfer landed
	DecisionTransferFailed  DecisionKind = "transfer_failed"  // the transfer did not land
	DecisionTask            DecisionKind = "task"             // a task's step (Reason kind:phase→next)
	DecisionBalance         DecisionKind = "balance"          // a balancer action taken, with its reason and numbers
	DecisionBalanceRefused  DecisionKind = "balance_refused"  // a balancer action the controller refused
	DecisionBalanceHeld     DecisionKind = "balance_held"     // why the balancer waits
	DecisionControllerVoter DecisionKind = "controller_voter" // a non-voting member of the controller promoted to a voter
	DecisionCheck           DecisionKind = "check"            // a state check found replicas that differ (Reason: the verdict)
	DecisionClusterVersion  DecisionKind = "cluster_version"  // the cluster version recorded: every node runs it
)

// Decision is one reconciliation decision in the controller's bounded log.
type Decision struct {
	// Seq numbers the decisions the controller recorded, from 1 (0: one
	// recorded before decisions were numbered); a page's cursor.
	Seq    uint64       `json:"seq"`
	AtMs   int64        `json:"at_ms"`
	Group  GroupID      `json:"group"`
	Kind   DecisionKind `json:"kind"`
	Reason Reason       `json:"reason"` // machine-readable: stale_intent, voter_mismatch, …
	Detail string       `json:"detail,omitempty"`
	// The inputs the decision was made from.
	Leader          NodeID `json:"leader"`
	Term            uint64 `json:"term"`
	PreferredLeader NodeID `json:"preferred_leader"`
	TargetLag       uint64 `json:"target_lag"`
	TargetReportAge int64  `json:"target_report_age_ms"`
	Observer        NodeID `json:"observer"`
}

// TaskKind names what a task does (controller: TaskReplicaMove, …).
type TaskKind string

// TaskPhase is a step of a task (controller: PhaseAddLearner, …).
type TaskPhase string

// TaskStatus is where a task stands (controller: TaskRunning, …).
type TaskStatus string

// PhaseRecord is what a task observed when it finished a phase: the Raft
// membership of the group at that moment.
type PhaseRecord struct {
	Phase          TaskPhase `json:"phase"`
	AtMs           int64     `json:"at_ms"`
	Voters         []uint64  `json:"voters"`   // replica ids
	Learners       []uint64  `json:"learners"` // replica ids
	ConfigChangeID uint64    `json:"config_change_id"`
	Note           string    `json:"note,omitempty"`
}

// ChangeCursor is a position in a hash slot's change log: the Raft index of
// the source group's entry and the change's sequence within it.
type ChangeCursor struct {
	Index uint64 `json:"index"`
	Seq   uint32 `json:"seq"`
}

// Task is a controller task (a replica move, a hash-slot migration, a group
// creation, split or merge), with its history.
type Task struct {
	ID       uint64    `json:"id"`
	Kind     TaskKind  `json:"kind"`
	Group    GroupID   `json:"group"`
	From     NodeID    `json:"from_node,omitempty"`
	To       NodeID    `json:"to_node,omitempty"`
	HashSlot *HashSlot `json:"hash_slot,omitempty"` // slot migrations: the slot, from Group to ToGroup
	ToGroup  GroupID   `json:"to_group,omitempty"`
	// Splits and merges: the hash slots still to move from Group to
	// ToGroup, HashSlot (the one moving now) first; Moved counts those done.
	HashSlots []HashSlot `json:"hash_slots,omitempty"`
	Moved     int        `json:"moved,omitempty"`
	// Live moves (every slot-moving task created now): the slot keeps
	// taking writes while it is copied and caught up from the source's
	// change log; Cursor is how far that log was applied to the target.
	Live   bool          `json:"live,omitempty"`
	Cursor *ChangeCursor `json:"cursor,omitempty"`
	// CopiedTo is, in the copy phase, the last row key imported so far.
	CopiedTo []byte `json:"copied_to,omitempty"`
	// SnapshotBytes is, in a replica move's catch-up, the snapshot bytes
	// the learner's node last said it had received.
	SnapshotBytes uint64        `json:"snapshot_bytes,omitempty"`
	OldReplicaID  uint64        `json:"old_replica_id,omitempty"`
	NewReplicaID  uint64        `json:"new_replica_id,omitempty"`
	Phase         TaskPhase     `json:"phase"`
	Status        TaskStatus    `json:"status"`
	Attempt       int           `json:"attempt"`
	Error         string        `json:"error,omitempty"`
	History       []PhaseRecord `json:"history"`
	CreatedAtMs   int64         `json:"created_at_ms"`
	UpdatedAtMs   int64         `json:"updated_at_ms"`
}
