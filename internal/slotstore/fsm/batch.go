package fsm

import (
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/store"
)

// Batch reads (meta.GetRows): the keys of one group read from one snapshot
// of the store, so a batch shows one cut of the group's state, not a mix
// of before and after an Update that landed while it read.

// getRows answers meta.GetRows: each key's row as stored, or missing, or —
// its hash slot not owned here (moved since the caller routed it) —
// BatchWrongGroup.
//
// A slot counts as owned only if it is so both before and after the
// snapshot is taken: a release stops owning its slot before its rows go
// (the snapshot without them comes with an ownership without the slot), an
// acquire owns it only after its rows were written (an ownership with the
// slot from before the snapshot means the snapshot has them).
func (s reader) getRows(q *meta.GetRows) (*meta.RowBatch, error) {
	if !slices.Contains(meta.BatchTables, q.Table) {
		return nil, slotstore.Errorf(slotstore.CodeInvalidArgument, "a batch reads no rows of table %d", q.Table)
	}
	before := s.owned.Load()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	owned := before.And(s.owned.Load())
	out := &meta.RowBatch{Items: make([]meta.RowBatchItem, len(q.Keys))}
	size := 0
	for i, k := range q.Keys {
		if size >= meta.MaxBatchAnswerBytes {
			out.Items[i].State = meta.BatchNotRead
			continue
		}
		hs := slotstore.HashSlotOfString(k.Key)
		if !owned.Has(hs) {
			out.Items[i].State = meta.BatchWrongGroup
			continue
		}
		raw, found, err := store.Get(snap, k.StoreKey(s.cfg.Group, hs, q.Table))
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		size += len(raw)
		out.Items[i] = meta.RowBatchItem{State: meta.BatchFound, Row: raw}
	}
	return out, nil
}
