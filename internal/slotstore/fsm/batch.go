package fsm

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/store"
)

// Batch reads (meta.GetKVs): the keys of one group read from one snapshot
// of the store, so a batch shows one cut of the group's state, not a mix
// of before and after an Update that landed while it read.

// getKVs answers meta.GetKVs: each key's row, or missing, or — its hash
// slot not owned here (moved since the caller routed it) — BatchWrongGroup.
//
// A slot counts as owned only if it is so both before and after the
// snapshot is taken: a release stops owning its slot before its rows go
// (the snapshot without them comes with an ownership without the slot), an
// acquire owns it only after its rows were written (an ownership with the
// slot from before the snapshot means the snapshot has them).
func (s reader) getKVs(q *meta.GetKVs) (*meta.KVBatch, error) {
	before := s.owned.Load()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	owned := before.And(s.owned.Load())
	out := &meta.KVBatch{Items: make([]meta.KVBatchItem, len(q.Keys))}
	size := 0
	for i, k := range q.Keys {
		if size >= meta.MaxBatchAnswerBytes {
			out.Items[i].State = meta.BatchNotRead
			continue
		}
		hs := slotstore.HashSlotOfString(k)
		if !owned.Has(hs) {
			out.Items[i].State = meta.BatchWrongGroup
			continue
		}
		raw, found, err := store.Get(snap, meta.KVKey(s.cfg.Group, hs, k))
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		kv, err := meta.DecodeKV(raw)
		if err != nil {
			return nil, err
		}
		size += len(raw)
		out.Items[i] = meta.KVBatchItem{State: meta.BatchFound, KV: kv}
	}
	return out, nil
}
