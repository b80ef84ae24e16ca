package fsm

import (
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Live hash-slot moves on the state machine side (meta/slotmove.go): while a
// slot is tracked, every row key a command writes or deletes in it is also
// recorded in the slot's change log, keyed by the entry's Raft index and a
// sequence within the entry, so that the target can catch up with the
// source while the source keeps taking writes. The log lives under the
// group's system records (it is in snapshots, never in a slot export).

// logChange records key in its slot's change log if the slot is tracked.
// Keys outside the group's hash slots (system records, the log itself) are
// never logged.
func (a *applier) logChange(key []byte) {
	hs, ok := a.trackedSlotOf(key)
	if !ok {
		return
	}
	if err := a.b.Set(meta.ChangeLogKey(a.sm.cfg.Group, hs, a.index, a.seq), key[6:], nil); err != nil {
		a.fail(err)
	}
	a.seq++
}

// trackedSlotOf returns the tracked slot of the group that key (or a
// prefix) lies in.
func (a *applier) trackedSlotOf(key []byte) (slotstore.HashSlot, bool) {
	if len(key) < 6 || binary.BigEndian.Uint32(key) != uint32(a.sm.cfg.Group) {
		return 0, false
	}
	hs := slotstore.HashSlot(binary.BigEndian.Uint16(key[4:6]))
	return hs, hs.Valid() && a.tracked.Has(hs)
}

// applyTracking applies the live-move commands; ok is false for the others.
func (a slotApplier) applyTracking(c meta.SlotCommand, refuse func(string, ...any) meta.Result) (meta.Result, bool) {
	g, hs := a.sm.cfg.Group, c.Head().HashSlot
	switch c := c.(type) {
	case *meta.TrackSlot:
		if !a.owned.Has(hs) {
			return refuse("cannot track a slot the group does not own"), true
		}
		a.setSlot(&a.tracked, hs, true)
		a.tracking = true
	case *meta.UntrackSlot:
		a.untrack(g, hs)
	case *meta.ImportChanges:
		if a.owned.Has(hs) {
			return refuse("cannot import into a slot the group owns"), true
		}
		prefix := meta.SlotPrefix(g, hs)
		row := func(k []byte) []byte { return append(append(make([]byte, 0, len(prefix)+len(k)), prefix...), k...) }
		for _, r := range c.Rows {
			a.put(row(r.Key), r.Value)
		}
		for _, k := range c.Deleted {
			a.drop(row(k))
		}
		return meta.Result{Revision: a.revision}, true
	default:
		return meta.Result{}, false
	}
	return meta.Result{Revision: a.revision}, true
}

// untrack stops logging hs's changes and deletes its log.
func (a slotApplier) untrack(g slotstore.GroupID, hs slotstore.HashSlot) {
	a.setSlot(&a.tracked, hs, false)
	a.tracking = !a.tracked.Empty()
	a.delPrefix(meta.ChangeLogPrefix(g, hs))
}

// exportChanges reads one bounded chunk of a tracked slot's change log after
// the cursor, answering each changed row with its value now (a row listed
// twice is sent once).
func (s reader) exportChanges(q *meta.ExportChanges) (*meta.ChangeChunk, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	if !s.tracked.Load().Has(q.HashSlot) {
		return nil, &slotstore.Error{Code: slotstore.CodeConflict, Message: "hash slot is not tracked: its changes are not logged"}
	}
	maxBytes := q.MaxBytes
	if maxBytes <= 0 || maxBytes > 4<<20 {
		maxBytes = 256 << 10
	}
	g := s.cfg.Group
	prefix := meta.ChangeLogPrefix(g, q.HashSlot)
	lower := prefix
	if q.AfterIndex > 0 || q.AfterSeq > 0 {
		lower = append(meta.ChangeLogKey(g, q.HashSlot, q.AfterIndex, q.AfterSeq), 0)
	}
	// One view for the log and the rows it names.
	snap := s.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	chunk := &meta.ChangeChunk{Revision: s.rev.Load(), NextIndex: q.AfterIndex, NextSeq: q.AfterSeq, Done: true}
	seen := map[string]bool{}
	rowPrefix := meta.SlotPrefix(g, q.HashSlot)
	size := 0
	for it.First(); it.Valid(); it.Next() {
		if size >= maxBytes || chunk.Records >= 4096 {
			chunk.Done = false
			break
		}
		k := it.Key()[len(prefix):]
		if len(k) != 12 {
			continue
		}
		chunk.NextIndex, chunk.NextSeq = binary.BigEndian.Uint64(k), binary.BigEndian.Uint32(k[8:])
		chunk.Records++
		rk := string(it.Value())
		if seen[rk] {
			continue
		}
		seen[rk] = true
		full := append(append([]byte(nil), rowPrefix...), rk...)
		v, closer, err := snap.Get(full)
		switch {
		case errors.Is(err, pebble.ErrNotFound):
			chunk.Deleted = append(chunk.Deleted, []byte(rk))
			size += len(rk)
		case err != nil:
			return nil, err
		default:
			chunk.Rows = append(chunk.Rows, meta.Row{Key: []byte(rk), Value: append([]byte(nil), v...)})
			size += len(rk) + len(v)
			_ = closer.Close()
		}
	}
	return chunk, it.Error()
}
