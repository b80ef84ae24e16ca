package slotstore

import "context"

// RecoveryReport answers a lost-quorum recovery of a group (issue 29):
// what it did, and exactly what may have been lost.
type RecoveryReport struct {
	Group GroupID `json:"group"`
	// Node holds the group now, as Replica (its replica OldReplica before);
	// Tombstoned are the replicas that never run again.
	Node       NodeID              `json:"node"`
	OldReplica uint64              `json:"old_replica"`
	Replica    uint64              `json:"replica"`
	Tombstoned []TombstonedReplica `json:"tombstoned"`
	// RecoveredIndex is the Raft index the group stands at: everything
	// the survivor logged, applied (SurvivorApplied it had applied,
	// SurvivorCommit the commit it knew, SurvivorLast its last entry).
	RecoveredIndex  uint64 `json:"recovered_index"`
	SurvivorApplied uint64 `json:"survivor_applied"`
	SurvivorCommit  uint64 `json:"survivor_commit"`
	SurvivorLast    uint64 `json:"survivor_last"`
	// HighestKnown is the highest index any replica was known to have
	// committed (applied, as last reported to the controller, or the
	// survivor's commit), and HighestKnownBy the node that reported it.
	HighestKnown   uint64 `json:"highest_known"`
	HighestKnownBy NodeID `json:"highest_known_by,omitempty"`
	// MayBeLost: entries (RecoveredIndex, HighestKnown] were committed on
	// replicas that are gone: the writes they carried — to the hash slots
	// below, made from LostFromMs on (the survivor's last applied
	// command) until LostToMs (the last report of a replica that had them)
	// — are lost. No surviving log holds them, so their keys are unknown.
	MayBeLost  bool       `json:"may_be_lost"`
	LostFrom   uint64     `json:"lost_from,omitempty"`
	LostTo     uint64     `json:"lost_to,omitempty"`
	LostFromMs int64      `json:"lost_from_ms,omitempty"`
	LostToMs   int64      `json:"lost_to_ms,omitempty"`
	HashSlots  []HashSlot `json:"hash_slots"`
	// Uncertain are the entries the survivor had logged but did not know
	// committed: applied by the recovery, so their writes are there now,
	// though they may never have been acknowledged.
	Uncertain []RecoveredEntry `json:"uncertain,omitempty"`
	Message   string           `json:"message"`
}

// TombstonedReplica is one replica a recovery tombstoned.
type TombstonedReplica struct {
	Node    NodeID `json:"node"`
	Replica uint64 `json:"replica"`
}

// RecoveredEntry is one Raft entry a recovery applied from the survivor's
// log: the keys its commands route by and when they were made.
type RecoveredEntry struct {
	Index  uint64   `json:"index"`
	Keys   []string `json:"keys"`
	TimeMs int64    `json:"time_ms,omitempty"`
}

// Recovery is the operator's repair of groups. RecoverGroup rebuilds a
// group that lost its quorum from its most advanced surviving replica
// (acceptDataLoss must be true: writes may be lost, and the report says
// which), and Recoveries lists the reports of those made through this
// node, newest first. CheckGroup checks g's replicas against each other
// now (a state check, issue 52) and returns what it found; a minority it
// finds is fenced, to be rebuilt from the majority.
type Recovery interface {
	RecoverGroup(ctx context.Context, g GroupID, acceptDataLoss bool) (RecoveryReport, error)
	Recoveries() []RecoveryReport
	CheckGroup(ctx context.Context, g GroupID) (GroupCheck, error)
}
