package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/client"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

// raftReplicator proposes entries to one group through the local NodeHost.
type raftReplicator struct {
	nh      *dragonboat.NodeHost
	shard   uint64
	group   slotstore.GroupID
	session *client.Session
}

func (r *raftReplicator) Replicate(ctx context.Context, entry []byte) ([]meta.Result, error) {
	res, err := r.nh.SyncPropose(ctx, r.session, entry)
	if err != nil {
		return nil, raftError(err, r.group, true)
	}
	results, err := meta.DecodeResults(res.Data)
	if err != nil {
		return nil, slotstore.Wrap(slotstore.CodeInternal, err, "undecodable results")
	}
	return results, nil
}

// raftError turns a dragonboat error into the one error type. write says
// whether the request was a proposal, whose timeout leaves the outcome open.
func raftError(err error, g slotstore.GroupID, write bool) error {
	e := &slotstore.Error{Err: err}
	switch {
	case errors.Is(err, dragonboat.ErrSystemBusy):
		e.Code, e.Message, e.RetryAfter = slotstore.CodeBusy, "raft group is overloaded", 200*time.Millisecond
	case errors.Is(err, dragonboat.ErrShardNotReady):
		e.Code, e.Message, e.RetryAfter = slotstore.CodeRouteNotReady, "group has no leader right now", 500*time.Millisecond
	case errors.Is(err, dragonboat.ErrTimeout), errors.Is(err, dragonboat.ErrTimeoutTooSmall),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		e.Code, e.RetryAfter = slotstore.CodeTimeout, time.Second
		e.Message = "timed out"
		if write {
			e.Message = "timed out; the write may or may not have been applied"
		}
	case errors.Is(err, dragonboat.ErrShardClosed), errors.Is(err, dragonboat.ErrClosed),
		errors.Is(err, dragonboat.ErrShardNotFound), errors.Is(err, dragonboat.ErrShardNotInitialized):
		e.Code, e.Message, e.RetryAfter = slotstore.CodeRouteNotReady, "group is not running on this node", time.Second
	case errors.Is(err, dragonboat.ErrAborted), errors.Is(err, dragonboat.ErrCanceled), errors.Is(err, dragonboat.ErrRejected):
		e.Code, e.Message, e.RetryAfter = slotstore.CodeBusy, "request was dropped by raft; retry", 200*time.Millisecond
	case errors.Is(err, dragonboat.ErrPayloadTooBig):
		e.Code, e.Message = slotstore.CodePayloadTooLarge, "entry too large for raft"
	default:
		e.Code, e.Message = slotstore.CodeInternal, "raft error"
	}
	e.Message = g.String() + ": " + e.Message
	return e
}
