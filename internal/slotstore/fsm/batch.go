package fsm

import (
	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
	"slotmeta/internal/slotstore/store"
)

// Batch reads (meta.GetKVs): the keys of one group read from one snapshot
// of the store, so a batch shows one cut of the group's state, not a mix
// of before and after an Update that landed while it read.

// getKVs answers meta.GetKVs: each key's row, or missing, or — its hash
// slot not owned here (moved since the caller routed it) — BatchWrongGroup.
//
// The ownership is loaded after the snapshot is taken: a release stops
// owning its slot before its rows go, so a snapshot without the rows comes
// with an ownership without the slot.
func (s reader) getKVs(q *meta.GetKVs) (*meta.KVBatch, error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	owned := s.owned.Load()
	out := &meta.KVBatch{Items: make([]meta.KVBatchItem, len(q.Keys))}
	for i, k := range q.Keys {
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
		out.Items[i] = meta.KVBatchItem{State: meta.BatchFound, KV: kv}
	}
	return out, nil
}
