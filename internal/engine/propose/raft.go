package propose

import (
	"context"
	"errors"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/client"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// RaftReplicator proposes entries to one group through the local NodeHost.
//
// A proposal dragonboat drops comes back as ErrShardNotReady. Dropped means
// never appended: the leader drops proposals while a leader transfer is
// pending, and followers and candidates drop them when they know no leader,
// each before anything reaches the log (internal/raft/raft.go,
// handleLeaderPropose, handleFollowerPropose, handleCandidatePropose →
// reportDroppedProposal; node.go processDroppedEntries → RequestDropped →
// ErrShardNotReady), and a replica not yet initialized refuses before
// queueing (node.go propose). So a dropped entry is proposed again — a
// transfer or an election lasts a moment, and refusing every write of it
// would turn a routine transfer into an outage — until it lands, the
// request's deadline passes (route_not_ready: not proposed), or another
// replica is seen to lead (not_leader with the hint: the caller follows it).
type RaftReplicator struct {
	NH       *dragonboat.NodeHost
	Shard    uint64
	Group    slotstore.GroupID
	Replica  uint64 // this node's replica
	Session  *client.Session
	LeaderOf func(replica uint64) slotstore.NodeID // the node of a replica (0: unknown)
	Changed  func() context.Context                // cancelled at the group's next leader change
	Dropped  func()                                // counts a dropped entry (metrics)
}

// dropRetry bounds the pause between proposals of a dropped entry (each
// pause also ends at a leader change).
const dropRetry = 20 * time.Millisecond

func (r *RaftReplicator) Replicate(ctx context.Context, entry []byte) ([]meta.Result, error) {
	pause := time.Millisecond
	for {
		change := r.Changed()
		// Proposed on a replica that no longer leads, dragonboat would
		// pass the entry on to the leader by itself, with no answer when
		// that message is lost: say not_leader instead (nothing proposed).
		if err := r.notLeader(nil); err != nil {
			return nil, err
		}
		res, err := r.NH.SyncPropose(ctx, r.Session, entry)
		if err == nil {
			results, err := meta.DecodeResults(res.Data)
			if err != nil {
				return nil, slotstore.Wrap(slotstore.CodeInternal, err, "undecodable results")
			}
			return results, nil
		}
		if !errors.Is(err, dragonboat.ErrShardNotReady) {
			return nil, RaftError(err, r.Group, true)
		}
		r.Dropped()
		if err := r.notLeader(err); err != nil {
			return nil, err
		}
		if !Sleep(ctx, change, pause) {
			return nil, &slotstore.Error{Code: slotstore.CodeRouteNotReady, Err: err, RetryAfter: 200 * time.Millisecond,
				Message: r.Group.String() + ": raft dropped the write while its leadership changed, until the deadline; not proposed"}
		}
		pause = min(2*pause, dropRetry)
	}
}

// notLeader returns not_leader (with the leader as the hint) when another
// replica is known to lead the group, else nil.
func (r *RaftReplicator) notLeader(cause error) error {
	leader, term, valid, err := r.NH.GetLeaderID(r.Shard)
	if err != nil || !valid || leader == r.Replica {
		return nil
	}
	node := r.LeaderOf(leader)
	if node == 0 {
		return nil
	}
	return &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: node, LeaderTerm: term, Err: cause,
		RetryAfter: 100 * time.Millisecond, Message: r.Group.String() + ": leadership moved before the write was appended; not proposed"}
}

// Sleep waits d, or less if wake is done; it reports false if ctx ended
// first.
func Sleep(ctx, wake context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake.Done():
	case <-t.C:
	}
	return ctx.Err() == nil
}

// RaftError turns a dragonboat error into the one error type. write says
// whether the request was a proposal, whose timeout leaves the outcome open.
func RaftError(err error, g slotstore.GroupID, write bool) error {
	e := &slotstore.Error{Err: err}
	switch {
	case errors.Is(err, dragonboat.ErrSystemBusy):
		e.Code, e.Message, e.RetryAfter = slotstore.CodeBusy, "raft group is overloaded", 200*time.Millisecond
	case errors.Is(err, dragonboat.ErrShardNotReady):
		e.Code, e.Message, e.RetryAfter = slotstore.CodeRouteNotReady, "group has no leader right now", 500*time.Millisecond
	case errors.Is(err, dragonboat.ErrTimeout), errors.Is(err, dragonboat.ErrTimeoutTooSmall),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, dragonboat.ErrCanceled):
		e.Code, e.RetryAfter = slotstore.CodeTimeout, time.Second
		e.Message = "timed out"
		if write {
			e.Message = "timed out; the write may or may not have been applied"
		}
	case write && (errors.Is(err, dragonboat.ErrShardClosed) || errors.Is(err, dragonboat.ErrClosed)):
		// dragonboat answers a proposal that was already queued, when its
		// replica stops (it applied its own removal in a replica move, or
		// the node closes), with the same error as one refused up front:
		// the entry may still commit through the group's next leader. Not
		// a "not proposed" — a resend would apply it twice (make chaos:
		// a subscriber add applied twice across a replica move).
		e.Code, e.RetryAfter = slotstore.CodeTimeout, time.Second
		e.Message = "the group stopped on this node while the write was pending; it may or may not have been applied"
	case errors.Is(err, dragonboat.ErrShardClosed), errors.Is(err, dragonboat.ErrClosed),
		errors.Is(err, dragonboat.ErrShardNotFound), errors.Is(err, dragonboat.ErrShardNotInitialized):
		e.Code, e.Message, e.RetryAfter = slotstore.CodeRouteNotReady, "group is not running on this node", time.Second
	case errors.Is(err, dragonboat.ErrAborted), errors.Is(err, dragonboat.ErrRejected):
		e.Code, e.Message, e.RetryAfter = slotstore.CodeBusy, "request was dropped by raft; retry", 200*time.Millisecond
	case errors.Is(err, dragonboat.ErrPayloadTooBig):
		e.Code, e.Message = slotstore.CodePayloadTooLarge, "entry too large for raft"
	default:
		e.Code, e.Message = slotstore.CodeInternal, "raft error"
	}
	e.Message = g.String() + ": " + e.Message
	return e
}
