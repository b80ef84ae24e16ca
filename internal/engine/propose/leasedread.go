package propose

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
)

// LeasedReadIndex runs the read rounds of one replica (a ReadBatcher's
// ReadIndexer). While the replica leads under a valid lease (lease.go) a
// round asks the local Raft which committed entries are not yet applied and
// waits for their apply — no message leaves the node. On a follower, a round
// asks the leader's node for that index (its applied index after a round of
// its own, over peer RPC batched across groups: Remote) and waits until the local replica has
// applied it. Otherwise, or when either fails, it runs Round (a ReadIndex
// round), and a round that started and completed while this replica led in
// one term renews the lease.
type LeasedReadIndex struct {
	NH      *dragonboat.NodeHost
	Shard   uint64
	Replica uint64 // this node's replica of the shard
	Lease   *Lease
	Round   ReadIndexer
	// Applied is the last index the local state machine applied (0 until
	// it exists); WaitApplied waits until it reaches index.
	Applied     func() uint64
	WaitApplied func(ctx context.Context, index uint64) error
	// Remote asks the node of replica leader for its read index (nil: a
	// follower always runs Round); it gets at most RemoteBudget, its wait
	// for the local apply included.
	Remote       func(ctx context.Context, leader uint64) (uint64, error)
	RemoteBudget time.Duration
	// Changed is cancelled at the group's next leader change: a question
	// to the old leader's node ends there.
	Changed func() context.Context
	// Saved is what this process saved to the replica's log or sent from
	// it: the first index saved and the highest update entry (raftlog.Appended;
	// nil: ReadNow never answers).
	Saved func() (first, maxUpdate uint64)
	// Leader is the shard's leader replica and term as this node knows
	// them (nil: the NodeHost's GetLeaderID).
	Leader func() (replica, term uint64, ok bool)
	// Observe, if set, counts how each read (ReadNow) or round was
	// answered (metrics).
	Observe func(ReadPath)

	// scannedTo: the committed entries up to it were listed, and their
	// application entries reach at most scannedMax. Only the round
	// goroutine of the one ReadBatcher over this indexer writes them
	// (one round at a time per group: one log query, which is all
	// dragonboat takes per shard); ReadNow reads them from any goroutine.
	scannedTo, scannedMax atomic.Uint64
	remote, now           atomic.Uint64
}

// maxPendingBytes bounds what one round reads of the entries the leader
// committed and has not applied; more than that (a leader far behind) falls
// back to a ReadIndex round.
const maxPendingBytes = 1 << 20

// ReadPath is how a linearizable read or read round was answered.
type ReadPath uint8

const (
	PathLeaseNow  ReadPath = iota // a read the leader answered at once under its lease (ReadNow)
	PathLeaseLog                  // a round the leader answered under its lease with a log query
	PathLeader                    // a follower's round the leader's node answered (Remote)
	PathReadIndex                 // a ReadIndex round
	readPaths
)

var readPathNames = [readPaths]string{"lease_now", "lease_log", "leader", "read_index"}

func (p ReadPath) String() string {
	if p < readPaths {
		return readPathNames[p]
	}
	return "unknown"
}

// ReadPaths lists every ReadPath in order (for metrics to pre-register).
func ReadPaths() []ReadPath {
	out := make([]ReadPath, readPaths)
	for p := range out {
		out[p] = ReadPath(p)
	}
	return out
}

func (r *LeasedReadIndex) observe(p ReadPath) {
	if r.Observe != nil {
		r.Observe(p)
	}
}

var (
	errPendingUnknown = errors.New("the committed entries not yet applied could not be listed")
	errNoLease        = errors.New("this replica does not lead under a valid lease")
)

func (r *LeasedReadIndex) ReadIndex(ctx context.Context) error {
	leader, term, known := r.leader()
	switch {
	case known && leader == r.Replica:
		if u, err := r.leaseIndex(ctx); err == nil {
			if err := r.WaitApplied(ctx, u); err == nil {
				r.Lease.served()
				r.observe(PathLeaseLog)
				return nil
			}
		}
	case known && r.Remote != nil:
		rctx, cancel := context.WithTimeout(ctx, r.RemoteBudget)
		if r.Changed != nil {
			stop := context.AfterFunc(r.Changed(), cancel)
			defer stop()
		}
		u, err := r.Remote(rctx, leader)
		if err == nil {
			err = r.WaitApplied(rctx, u)
		}
		cancel()
		if err == nil {
			r.remote.Add(1)
			r.observe(PathLeader)
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	start := r.Lease.Now()
	if err := r.Round.ReadIndex(ctx); err != nil {
		return err
	}
	r.observe(PathReadIndex)
	if known && leader == r.Replica {
		if l, t, ok := r.leader(); ok && l == r.Replica && t == term {
			r.Lease.Grant(term, start)
		}
	}
	return nil
}

// leaseIndex returns, while this replica leads under a valid lease, the
// index a replica of the group must have applied to answer a linearizable
// read that arrived before the call (pendingUpdate); errNoLease otherwise.
// The lease must still hold after the query: what it listed is complete only
// while no other replica can have been elected.
func (r *LeasedReadIndex) leaseIndex(ctx context.Context) (uint64, error) {
	leader, term, known := r.leader()
	if !known || leader != r.Replica || !r.Lease.Valid(term) {
		return 0, errNoLease
	}
	u, err := r.pendingUpdate(ctx)
	if err != nil {
		return 0, err
	}
	if l, t, ok := r.leader(); !ok || l != r.Replica || t != term || !r.Lease.Valid(term) {
		return 0, errNoLease
	}
	return u, nil
}

// ReadNow reports whether a linearizable read that arrived before the call
// may be answered from the local state machine at once, with no round: the
// replica leads under a valid lease and its state machine has applied every
// update entry its log can have committed — those this process saved or
// sent (Saved: a leader commits only what it saved, or as the only voter
// sent, see raftlog.Appended) and,
// below the first of them, those a log query listed (scannedTo). Under a
// read-only load every read of a leader takes this path; a write not yet
// applied sends reads to the round, which waits only for what is committed.
// Safe from any goroutine.
func (r *LeasedReadIndex) ReadNow() bool {
	if r.Saved == nil {
		return false
	}
	leader, term, known := r.leader()
	if !known || leader != r.Replica || !r.Lease.Valid(term) {
		return false
	}
	first, maxUpdate := r.Saved()
	applied := r.Applied()
	if first == 0 || r.scannedTo.Load()+1 < first || maxUpdate > applied || r.scannedMax.Load() > applied {
		return false
	}
	// What Saved told is complete only while no other replica can have
	// been elected: the lease must still hold after reading it.
	if l, t, ok := r.leader(); !ok || l != r.Replica || t != term || !r.Lease.Valid(term) {
		return false
	}
	r.now.Add(1)
	r.observe(PathLeaseNow)
	return true
}

// NowReads counts the reads ReadNow answered.
func (r *LeasedReadIndex) NowReads() uint64 { return r.now.Load() }

// scanned records what a log query listed; the round goroutine only.
func (r *LeasedReadIndex) scanned(to, maxUpdate uint64) {
	r.scannedMax.Store(maxUpdate) // before scannedTo: ReadNow reads scannedTo first
	r.scannedTo.Store(to)
}

// RemoteRounds counts the rounds of this follower that the leader's node
// answered.
func (r *LeasedReadIndex) RemoteRounds() uint64 { return r.remote.Load() }

// leader is the shard's leader replica and term as the local NodeHost knows
// them.
func (r *LeasedReadIndex) leader() (uint64, uint64, bool) {
	if r.Leader != nil {
		return r.Leader()
	}
	leader, term, valid, err := r.NH.GetLeaderID(r.Shard)
	return leader, term, err == nil && valid
}

// pendingUpdate returns the index the state machine must reach to hold
// every application entry this leader has committed: the highest such entry
// the local Raft has committed and the state machine has not applied (the
// applied index itself when there is none). The state machine sees only
// application entries — dragonboat applies its own no-op of a new term and
// configuration changes without it — so the commit index itself may never
// be reached by it. The entries come from a log query of the local Raft,
// answered within one pass of the step worker with no message leaving the
// node (raft.handleLogQuery: the committed entries from the index asked,
// and the commit index). Committed entries never change, so what one query
// listed is not listed again (scannedTo, scannedMax); entries the log has
// compacted are in the local state already (dragonboat compacts only what
// its replica applied or received in a snapshot). A query still pending
// from an earlier round that gave up makes this one fail (ErrSystemBusy):
// the round falls back to ReadIndex, as it does for a list that does not
// reach the commit index.
func (r *LeasedReadIndex) pendingUpdate(ctx context.Context) (uint64, error) {
	applied := r.Applied()
	floor, base := applied, applied // the answer at least; listed up to base
	if to := r.scannedTo.Load(); to > applied {
		floor, base = max(applied, r.scannedMax.Load()), to
	}
	for range 2 { // a second query only past a compacted prefix
		rs, err := r.NH.QueryRaftLog(r.Shard, base+1, math.MaxUint64, maxPendingBytes)
		if err != nil {
			return 0, err
		}
		var res dragonboat.RequestResult
		select {
		case res = <-rs.AppliedC():
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if !res.RequestOutOfRange() && !res.Completed() {
			return 0, errPendingUnknown
		}
		ents, lr := res.RaftLogs()
		if lr.LastIndex == 0 {
			return 0, errPendingUnknown
		}
		commit := lr.LastIndex - 1
		if res.RequestOutOfRange() {
			switch {
			case commit <= base: // nothing committed past what is listed
				r.scanned(max(r.scannedTo.Load(), base), floor)
				return floor, nil
			case lr.FirstIndex > base+1: // compacted: in the local state already
				base = lr.FirstIndex - 1
				continue
			}
			return 0, errPendingUnknown
		}
		if len(ents) == 0 || ents[0].Index != base+1 || ents[len(ents)-1].Index < commit {
			return 0, errPendingUnknown // not the whole range (size-limited)
		}
		u := floor
		for i := range ents {
			if ents[i].IsUpdateEntry() && ents[i].Index > u {
				u = ents[i].Index
			}
		}
		r.scanned(commit, u)
		return u, nil
	}
	return 0, errPendingUnknown
}
