package raftlog

import (
	"errors"
	"fmt"

	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// How a replica restarts (issue 51): dragonboat takes the replica's own
// initial role from config.Config.IsNonVoting alone, and the membership
// from its latest snapshot (internal/raft/raft.go newRaft), then replays
// the log after that snapshot. A replica that joined as non-voting and was
// promoted since restarts from a point where it was still non-voting —
// its join, or a snapshot taken before the promotion — and the replay of
// "add <self> as non-voting" panics a replica started as a voter (raft.go
// addNonVoting: "is not a nonVoting"); so does restoring a snapshot that
// lists it as non-voting (raft.go restore: "converting to nonVoting").
// Started non-voting instead, the replica becomes the voter it is as it
// replays its promotion (addNode of self) or restores a snapshot that lists
// it as a voter (restoreRemotes). What it is now, in the controller's
// state, is not what the replay needs.

// ErrNotStarted says a replica never started on this NodeHost: it has no
// bootstrap record (dragonboat's HasNodeInfo is false).
var ErrNotStarted = errors.New("raftlog: the replica never started here")

// RestartsNonVoting reports whether replica of shard must restart as a
// non-voting replica: what it was where its replay begins. That is its
// latest snapshot's membership when that lists it, else how it began — a
// replica that joined a running group (dragonboat's bootstrap record says
// join) began non-voting, as every replica this system adds does; one of
// a group's founding members began a voter. It reads the log the factory
// created and must be called before the replica starts (it reads no
// state of a running replica).
func (f *Factory) RestartsNonVoting(shard, replica uint64) (bool, error) {
	db, err := f.created()
	if err != nil {
		return false, err
	}
	return restartsNonVoting(db, shard, replica)
}

// created is the log the factory created, or an error before the NodeHost
// created it.
func (f *Factory) created() (*commitLogDB, error) {
	if db := f.db.Load(); db != nil {
		return db, nil
	}
	return nil, errors.New("raftlog: no log yet (the NodeHost creates it)")
}

// ReplayTarget is the index a restarting replica applies up to from its own
// log before it hears from any peer: its saved commit index (raised to its
// latest snapshot, as ReadRaftState does for the engine). A replica that
// has applied it has replayed what it holds (replicas/startmarks.go).
func (f *Factory) ReplayTarget(shard, replica uint64) (uint64, error) {
	db, err := f.created()
	if err != nil {
		return 0, err
	}
	ss, err := db.GetSnapshot(shard, replica)
	if err != nil {
		return 0, fmt.Errorf("raftlog: read the latest snapshot of shard %d replica %d: %w", shard, replica, err)
	}
	rs, err := db.ReadRaftState(shard, replica, ss.Index)
	if errors.Is(err, raftio.ErrNoSavedLog) {
		return ss.Index, nil
	}
	if err != nil {
		return 0, fmt.Errorf("raftlog: read the state of shard %d replica %d: %w", shard, replica, err)
	}
	return max(rs.State.Commit, ss.Index), nil
}

// Raw is dragonboat's LogDB under the commit-deferring layer (nil before
// the NodeHost created it): what it writes goes to the disk as given. For
// tests that damage a stopped replica's state the way a disk can, and for
// tools.
func (f *Factory) Raw() raftio.ILogDB {
	if db := f.db.Load(); db != nil {
		return db.ILogDB
	}
	return nil
}

// restartsNonVoting is RestartsNonVoting over a LogDB.
func restartsNonVoting(db raftio.ILogDB, shard, replica uint64) (bool, error) {
	bi, err := db.GetBootstrapInfo(shard, replica)
	if errors.Is(err, raftio.ErrNoBootstrapInfo) {
		return false, fmt.Errorf("shard %d replica %d: %w", shard, replica, ErrNotStarted)
	}
	if err != nil {
		return false, fmt.Errorf("raftlog: read the bootstrap record of shard %d replica %d: %w", shard, replica, err)
	}
	ss, err := db.GetSnapshot(shard, replica) // an empty one when there is none
	if err != nil {
		return false, fmt.Errorf("raftlog: read the latest snapshot of shard %d replica %d: %w", shard, replica, err)
	}
	if !pb.IsEmptySnapshot(ss) {
		if _, ok := ss.Membership.NonVotings[replica]; ok {
			return true, nil
		}
		if _, ok := ss.Membership.Addresses[replica]; ok {
			return false, nil
		}
		// Not a member where the snapshot was taken: its replay adds it
		// as it began. (The engine sends an on-disk state machine a
		// snapshot streamed from its state at the time, which lists the
		// learner it is sent to, so this should not happen.)
	}
	return bi.Join, nil
}
