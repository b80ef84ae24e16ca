package slotstore

// State checks (issue 52): every replica of a group hashes its state at one
// Raft index, per hash slot, and the digests are compared. The types here
// are what a check reports: to the operator (the API, ctl, the console), in
// the group's view, and between nodes.

// SystemSlot stands for a group's system records (applied index, owned and
// fenced slots, revision, idempotency log, change logs) in a digest: they
// are replicated state too, kept apart from the rows of hash slots.
const SystemSlot HashSlot = 0xFFFF

// SlotDigest is the digest of one hash slot's rows (or the system records,
// SystemSlot) on one replica: how many rows, their bytes (keys and values)
// and a hash of them in key order.
type SlotDigest struct {
	Slot  HashSlot `json:"slot"`
	Rows  uint64   `json:"rows"`
	Bytes uint64   `json:"bytes"`
	Hash  uint64   `json:"hash"`
}

// ReplicaDigest is one replica's digest of its group's state at the index
// of check CheckID: one SlotDigest per hash slot that has rows, in slot
// order, the system records last.
type ReplicaDigest struct {
	Group   GroupID      `json:"group"`
	CheckID uint64       `json:"check_id"`
	Index   uint64       `json:"index"`
	Slots   []SlotDigest `json:"slots"`
	TookMs  int64        `json:"took_ms"`
}

// CheckVerdict is what a check concluded.
type CheckVerdict string

const (
	// CheckConsistent: every replica answered, all with the same digest.
	CheckConsistent CheckVerdict = "consistent"
	// CheckIncomplete: some replicas did not answer; those that did agree.
	CheckIncomplete CheckVerdict = "incomplete"
	// CheckDiverged: a majority of the replicas agree; the others (the
	// minority) differ from it.
	CheckDiverged CheckVerdict = "diverged"
	// CheckNoMajority: replicas differ and no digest is held by a majority
	// of them: nothing can be chosen automatically.
	CheckNoMajority CheckVerdict = "no_majority"
)

// Alarming reports whether the verdict is a divergence.
func (v CheckVerdict) Alarming() bool { return v == CheckDiverged || v == CheckNoMajority }

// ReplicaCheck is one replica's part in a check.
type ReplicaCheck struct {
	Node      NodeID `json:"node"`
	ReplicaID uint64 `json:"replica_id"`
	// Digest is the hash over every slot's digest ("" when the replica did
	// not answer); replicas that agree have the same one.
	Digest string `json:"digest,omitempty"`
	Rows   uint64 `json:"rows"`
	Bytes  uint64 `json:"bytes"`
	TookMs int64  `json:"took_ms,omitempty"`
	// Agrees: the replica's digest is the majority's. Error: why it gave
	// none.
	Agrees bool   `json:"agrees"`
	Error  string `json:"error,omitempty"`
}

// GroupCheck is the outcome of one check of a group.
type GroupCheck struct {
	Group    GroupID        `json:"group"`
	CheckID  uint64         `json:"check_id"`
	Index    uint64         `json:"index"` // the Raft index every replica hashed at
	AtMs     int64          `json:"at_ms"`
	TookMs   int64          `json:"took_ms"`
	Verdict  CheckVerdict   `json:"verdict"`
	Replicas []ReplicaCheck `json:"replicas"`
	// Differing are the hash slots whose digests are not the same on every
	// replica that answered (SystemSlot: the system records).
	Differing []HashSlot `json:"differing,omitempty"`
	// Minority are the nodes whose replica differs from the majority.
	Minority []NodeID `json:"minority,omitempty"`
	// Fenced are the minority replicas' nodes that stopped serving them
	// (to be rebuilt from the majority); Action says what was done or why
	// nothing was.
	Fenced []NodeID `json:"fenced,omitempty"`
	Action string   `json:"action,omitempty"`
}
