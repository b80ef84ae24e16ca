package replicas

import (
	"context"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// ChangeLog is the node's watch.Log: a hash slot's change records, read
// from the local replica whose group owns the slot now (one that is not
// fenced first: a slot being handed over is owned by two groups for a
// moment, and the fenced source takes no more changes). A slot no local
// replica owns is watch.ErrUnavailable.
func (s *Set) ChangeLog() watch.Log { return changeLog{s} }

type changeLog struct{ set *Set }

func (l changeLog) Read(ctx context.Context, hs slotstore.HashSlot, after uint64, limit int) ([]watch.Record, error) {
	m := l.owner(hs)
	if m == nil {
		return nil, watch.ErrUnavailable
	}
	return m.ReadChanges(ctx, hs, after, limit)
}

func (l changeLog) Head(_ context.Context, hs slotstore.HashSlot) (uint64, error) {
	m := l.owner(hs)
	if m == nil {
		return 0, watch.ErrUnavailable
	}
	return m.ChangeHead(hs)
}

// Await waits until the local replica that serves each of slots has
// applied every change committed before the call (one linearizable read
// round per group, shared with the reads beside it): heads read after it
// include every write acknowledged before it.
func (l changeLog) Await(ctx context.Context, slots []slotstore.HashSlot) error {
	done := map[*Replica]bool{}
	for _, hs := range slots {
		r := l.replica(hs)
		if r == nil {
			return watch.ErrUnavailable
		}
		if done[r] {
			continue
		}
		if err := r.AwaitRead(ctx); err != nil {
			return err
		}
		done[r] = true
	}
	return nil
}

// owner returns the state machine here that serves hs's changes, or nil.
func (l changeLog) owner(hs slotstore.HashSlot) *fsm.StateMachine {
	if r := l.replica(hs); r != nil {
		return r.SM()
	}
	return nil
}

// replica returns the replica here that serves hs's changes, or nil.
func (l changeLog) replica(hs slotstore.HashSlot) *Replica {
	var fenced *Replica
	for _, r := range l.set.All() {
		m := r.SM()
		if m == nil {
			continue
		}
		switch owned, isFenced := m.Owns(hs); {
		case owned && !isFenced:
			return r
		case owned:
			fenced = r
		}
	}
	return fenced
}
