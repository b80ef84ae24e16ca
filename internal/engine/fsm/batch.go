package fsm

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Batch reads (meta.GetRows): the keys of one group read from one snapshot
// of the store, so a batch shows one cut of the group's state, not a mix
// of before and after an Update that landed while it read. GetRowsTogether
// reads the parts of many groups whose replicas share one store from one
// snapshot of it: a batch over 52 groups of a node costs one view, not 52.
//
// A slot counts as owned only if it is so both before and after the
// snapshot is taken: a release stops owning its slot before its rows go
// (the snapshot without them comes with an ownership without the slot), an
// acquire owns it only after its rows were written (an ownership with the
// slot from before the snapshot means the snapshot has them).

// getRows answers meta.GetRows: each key's row as stored, or missing, or —
// its hash slot not owned here (moved since the caller routed it) —
// BatchWrongGroup.
func (s reader) getRows(q *meta.GetRows) (*meta.RowBatch, error) {
	if err := checkRowsTable(q); err != nil {
		return nil, err
	}
	before := s.owned.Load()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	owned := before.And(s.owned.Load())
	return s.rowsFrom(snap, &owned, q)
}

// RowsPart is one group's share of a read of many: the query and the state
// machine of this node's replica that answers it.
type RowsPart struct {
	SM *StateMachine
	Q  *meta.GetRows
}

// GetRowsTogether answers every part's query as its state machine's Lookup
// would, all from one snapshot of the store they share: out[i] is
// parts[i]'s. Each state machine must be open; the caller has made each
// current enough (a read round of its group) before the call. Parts of
// state machines on different stores are refused: an internal error.
func GetRowsTogether(parts []RowsPart) ([]*meta.RowBatch, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	db := parts[0].SM.db
	before := make([]*meta.SlotSet, len(parts))
	for i, p := range parts {
		if p.SM.db != db {
			return nil, slotstore.Errorf(slotstore.CodeInternal, "groups %d and %d do not share a store", parts[0].SM.cfg.Group, p.SM.cfg.Group)
		}
		if err := checkRowsTable(p.Q); err != nil {
			return nil, err
		}
		before[i] = p.SM.owned.Load()
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	out := make([]*meta.RowBatch, len(parts))
	for i, p := range parts {
		owned := before[i].And(p.SM.owned.Load())
		b, err := reader{p.SM}.rowsFrom(snap, &owned, p.Q)
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", p.SM.cfg.Group, err)
		}
		out[i] = b
	}
	return out, nil
}

func checkRowsTable(q *meta.GetRows) error {
	if !slices.Contains(meta.BatchTables, q.Table) {
		return slotstore.Errorf(slotstore.CodeInvalidArgument, "a batch reads no rows of table %d", q.Table)
	}
	return nil
}

// rowsFrom reads q's keys from snap, counting as owned only the slots of
// owned (the ownership before the snapshot and after it).
func (s reader) rowsFrom(snap pebble.Reader, owned *meta.SlotSet, q *meta.GetRows) (*meta.RowBatch, error) {
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
