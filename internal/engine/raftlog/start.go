package raftlog

import (
	"errors"
	"fmt"

	pb "github.com/lni/dragonboat/v4/raftpb"
)

// Start is where a restored replica's Raft log begins (issue 29): just past
// Index, at Term, with Members as the group's voters — as if the replica
// had been sent a snapshot at Index. Its state machine must already stand
// at Index (a restore laid its rows out there).
//
// Why not start the restored group as a new one, at index 0: a replica
// added to it later would then be sent the log from its first entry and
// replay it over an empty state, without the restored rows. A log that
// begins past Index leaves the leader no entry to send such a replica but a
// snapshot of its state machine.
//
// The snapshot recorded at Index is a dummy, as dragonboat's own snapshots
// of an on-disk state machine are (no file; internal/rsm: a dummy snapshot
// is never loaded, only checked against the index the state machine opens
// at, which must not be below it), and imported (dragonboat's
// ILogDB.ImportSnapshot, the same call tools.ImportSnapshot ends in: a
// bootstrap record, the snapshot, a state committed up to it).
type Start struct {
	Shard, Replica uint64
	Index, Term    uint64
	Members        map[uint64]string // replica id → Raft address
}

// StartAt records s in the log of the NodeHost the factory serves. The
// replica must not run, nor have run here (dragonboat's HasNodeInfo false).
func (f *Factory) StartAt(s Start) error {
	db := f.db.Load()
	if db == nil {
		return errors.New("raftlog: no log yet (the NodeHost creates it)")
	}
	if s.Index == 0 || s.Term == 0 {
		return fmt.Errorf("raftlog: a start at index %d, term %d", s.Index, s.Term)
	}
	if _, ok := s.Members[s.Replica]; !ok {
		return fmt.Errorf("raftlog: replica %d is not among the members %v", s.Replica, s.Members)
	}
	ss := pb.Snapshot{ShardID: s.Shard, Index: s.Index, Term: s.Term, OnDiskIndex: s.Index, Dummy: true, Imported: true,
		Type: pb.OnDiskStateMachine,
		Membership: pb.Membership{ConfigChangeId: s.Index, Addresses: map[uint64]string{}, NonVotings: map[uint64]string{},
			Witnesses: map[uint64]string{}, Removed: map[uint64]bool{}}}
	for id, addr := range s.Members {
		ss.Membership.Addresses[id] = addr
	}
	return db.ImportSnapshot(ss, s.Replica)
}
