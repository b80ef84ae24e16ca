package fsm

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// The change feed's numbering (ADR 0016, meta/change.go). Every put or
// delete of a watched row in a slot the group owns, and every clear of a
// watched list, gets the slot's next sequence and a record in the slot's
// change log, written in the Update's batch beside the change; the records
// are handed to Config.Changes once the batch is committed. Rows a
// migration or live move imports land in a slot the group does not own
// yet: they are copied as they are (the source's records among them),
// never numbered again, so a slot's sequence continues wherever it goes.
//
// Retention is trimmed here too, at most two records per record added (a
// bounded amount of work per change, like the idempotency FIFO): the oldest
// goes while the slot keeps more than WatchRecords or the oldest is older
// than WatchAge by the command's time. Both decide which rows exist, so
// every replica of a group must use the same values.

// watched splits a key the applier changes into its slot, table and
// primary key when the change is numbered.
func (a *applier) watched(key []byte) (slotstore.HashSlot, meta.Table, []byte, bool) {
	g, hs, t, pk, ok := meta.SplitRowKey(key)
	if !ok || g != a.sm.cfg.Group || !t.Watched() || !a.owned.Has(hs) {
		return 0, 0, nil, false
	}
	return hs, t, pk, true
}

// head returns slot hs's change-log head as this Update sees it; the
// Update writes it back at its end (flushHeads).
func (a *applier) head(hs slotstore.HashSlot) *meta.WatchHead {
	if h := a.heads[hs]; h != nil {
		return h
	}
	h := &meta.WatchHead{First: 1}
	// The state machine's copy holds committed heads; one this Update
	// forgot (its slot's rows were released, imported or acquired here)
	// may no longer be what the batch holds.
	if kept, ok := a.sm.heads[hs]; ok && !slices.Contains(a.forgotHeads, hs) {
		*h = kept
	} else if raw, found := a.get(meta.WatchHeadKey(a.sm.cfg.Group, hs)); found {
		stored, err := meta.DecodeWatchHead(raw)
		if err != nil {
			a.fail(fmt.Errorf("decoding the change-log head of slot %d: %w", hs, err))
		} else {
			h = stored
		}
	}
	if a.heads == nil {
		a.heads = map[slotstore.HashSlot]*meta.WatchHead{}
	}
	a.heads[hs] = h
	return h
}

// forgetHead writes hs's head if this Update moved it and drops it from the
// caches: the slot is being fenced, released, imported or acquired, and the
// next Update must read what is stored. (Dropped unwritten, a fence in the
// same Update as the slot's last change left the stored head one behind;
// the target of the move imported it and numbered its first change with a
// sequence the source had given already — found by TestGroupSplitAndMerge's
// watch.)
func (a *applier) forgetHead(hs slotstore.HashSlot) {
	if h := a.heads[hs]; h != nil {
		a.put(meta.WatchHeadKey(a.sm.cfg.Group, hs), meta.EncodeWatchHead(h))
	}
	delete(a.heads, hs)
	a.forgotHeads = append(a.forgotHeads, hs)
}

// keepHeads hands what a committed Update did to the heads on to the
// state machine's copy, which spares the next Updates reading them.
func (a *applier) keepHeads() {
	for _, hs := range a.forgotHeads {
		delete(a.sm.heads, hs)
	}
	for hs, h := range a.heads {
		a.sm.heads[hs] = *h
	}
}

// flushHeads writes the heads the Update moved, once each, in slot order
// (a tracked slot's change log lists them: the same order on every
// replica).
func (a *applier) flushHeads() {
	slots := slices.Sorted(maps.Keys(a.heads))
	for _, hs := range slots {
		a.put(meta.WatchHeadKey(a.sm.cfg.Group, hs), meta.EncodeWatchHead(a.heads[hs]))
	}
}

// record numbers one change of slot hs and stores it.
func (a *applier) record(hs slotstore.HashSlot, ch meta.Change) {
	g := a.sm.cfg.Group
	h := a.head(hs)
	if h.First > h.Last {
		h.FirstTimeMs = a.timeMs
	}
	h.Last++
	if a.batch == 0 {
		a.batch = h.Last
	}
	ch.Batch, ch.TimeMs = a.batch, a.timeMs
	a.put(meta.WatchKey(g, hs, h.Last), meta.EncodeChange(&ch))
	a.trimChanges(hs, h)
	if a.sm.cfg.Changes != nil {
		a.changes = append(a.changes, watch.Record{Slot: hs, Seq: h.Last, Batch: ch.Batch, TimeMs: ch.TimeMs,
			Kind: ch.Kind, Table: ch.Table, Key: ch.Key, Value: ch.Value, Prev: ch.Prev})
	}
}

// trimChanges deletes up to two of hs's oldest records past retention
// (never the one just added).
func (a *applier) trimChanges(hs slotstore.HashSlot, h *meta.WatchHead) {
	g := a.sm.cfg.Group
	keep, age := uint64(a.sm.cfg.WatchRecords), a.sm.cfg.WatchAge.Milliseconds()
	for i := 0; i < 2 && h.First < h.Last; i++ {
		if h.Last-h.First+1 <= keep && a.timeMs-h.FirstTimeMs <= age {
			return
		}
		a.drop(meta.WatchKey(g, hs, h.First))
		h.First++
		raw, found := a.get(meta.WatchKey(g, hs, h.First))
		if !found {
			a.fail(fmt.Errorf("slot %d: change record %d of %d..%d missing", hs, h.First, h.First, h.Last))
			return
		}
		next, err := meta.DecodeChange(raw)
		if err != nil {
			a.fail(fmt.Errorf("slot %d: decoding change record %d: %w", hs, h.First, err))
			return
		}
		h.FirstTimeMs = next.TimeMs
	}
}

// clearRows deletes every row under prefix p of a watched table and
// numbers it as one clear; nothing when there is no row under p.
func (a *applier) clearRows(p []byte) {
	found := false
	a.eachInBatch(p, func(_, _ []byte) bool { found = true; return false })
	if !found {
		return
	}
	a.delPrefix(p)
	if hs, t, pk, ok := a.watched(p); ok {
		a.record(hs, meta.Change{Kind: meta.ChangeClear, Table: t, Key: pk})
	}
}

// Owns reports whether the group owns hash slot hs as far as this replica
// has applied, and whether it holds it fenced (handing it over).
func (s *StateMachine) Owns(hs slotstore.HashSlot) (owned, fenced bool) {
	return s.owned.Load().Has(hs), s.fenced.Load().Has(hs)
}

// ChangeHead answers the sequence of hash slot hs's last change here (0:
// none yet); watch.ErrUnavailable when the group does not own hs.
func (s *StateMachine) ChangeHead(hs slotstore.HashSlot) (uint64, error) {
	if !s.owned.Load().Has(hs) {
		return 0, watch.ErrUnavailable
	}
	h, err := s.readHead(s.db, hs)
	if !s.owned.Load().Has(hs) { // released while read: the head may be gone (stillOwned)
		return 0, watch.ErrUnavailable
	}
	return h.Last, err
}

// ReadChanges answers up to limit of hash slot hs's records after sequence
// after, from committed state; watch.ErrCompacted when the record after
// after is no longer kept, watch.ErrUnavailable when the group does not
// own hs.
func (s *StateMachine) ReadChanges(ctx context.Context, hs slotstore.HashSlot, after uint64, limit int) ([]watch.Record, error) {
	if !s.owned.Load().Has(hs) {
		return nil, watch.ErrUnavailable
	}
	snap := s.db.NewSnapshot()
	defer snap.Close()
	if !s.owned.Load().Has(hs) { // released before the snapshot: its log may be gone (stillOwned)
		return nil, watch.ErrUnavailable
	}
	h, err := s.readHead(snap, hs)
	if err != nil || after >= h.Last {
		return nil, err
	}
	if after+1 < h.First {
		return nil, watch.ErrCompacted
	}
	g := s.cfg.Group
	prefix := meta.WatchPrefix(g, hs)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: meta.WatchKey(g, hs, after+1), UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var recs []watch.Record
	for it.First(); it.Valid() && len(recs) < limit; it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k := it.Key()[len(prefix):]
		if len(k) != 8 {
			continue
		}
		ch, err := meta.DecodeChange(it.Value())
		if err != nil {
			return nil, fmt.Errorf("fsm: group %d: slot %d: change record: %w", g, hs, err)
		}
		recs = append(recs, watch.Record{Slot: hs, Seq: binary.BigEndian.Uint64(k), Batch: ch.Batch, TimeMs: ch.TimeMs,
			Kind: ch.Kind, Table: ch.Table, Key: ch.Key, Value: ch.Value, Prev: ch.Prev})
	}
	return recs, it.Error()
}

func (s *StateMachine) readHead(r pebble.Reader, hs slotstore.HashSlot) (meta.WatchHead, error) {
	raw, found, err := store.Get(r, meta.WatchHeadKey(s.cfg.Group, hs))
	if err != nil || !found {
		return meta.WatchHead{First: 1}, err
	}
	h, err := meta.DecodeWatchHead(raw)
	if err != nil {
		return meta.WatchHead{}, fmt.Errorf("fsm: group %d: slot %d: change-log head: %w", s.cfg.Group, hs, err)
	}
	return *h, nil
}
