package replicas

import (
	"context"
	"errors"

	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// What the node's dispatcher asks of a running replica (dispatch.Replica).

// Submit proposes an encoded command through the replica's proposer.
func (r *Replica) Submit(ctx context.Context, enc []byte) (meta.Result, error) {
	return r.Proposer.Submit(ctx, enc)
}

// LeaderKnown reports whether the replica knows a leader; true when the
// engine cannot tell (the read then finds out within its deadline).
func (r *Replica) LeaderKnown() bool {
	_, _, valid, err := r.nh.GetLeaderID(r.shard)
	return err != nil || valid
}

// AwaitRead waits for one linearizable read round, shared with the reads
// beside it (propose.ReadBatcher).
func (r *Replica) AwaitRead(ctx context.Context) error { return r.typed(r.Reads.Wait(ctx)) }

// Read answers q from the replica's state machine as it is.
func (r *Replica) Read(q meta.Query) (any, error) {
	v, err := r.nh.StaleRead(r.shard, q)
	return v, r.typed(err)
}

// typed is err as a *slotstore.Error: the engine's errors mapped
// (propose.RaftError), ours as they are.
func (r *Replica) typed(err error) error {
	if err == nil {
		return nil
	}
	var se *slotstore.Error
	if errors.As(err, &se) {
		return se
	}
	return propose.RaftError(err, r.Group, false)
}

// AppliedIndex is the last index the replica applied (0 before its state
// machine exists).
func (r *Replica) AppliedIndex() uint64 {
	if m := r.SM(); m != nil {
		return m.AppliedIndex()
	}
	return 0
}
