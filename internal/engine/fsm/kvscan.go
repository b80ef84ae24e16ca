package fsm

import (
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// scanKV answers meta.ScanKV: the business keys of a run of hash slots, in
// (slot, key) order, each slot read from where its bounds begin
// (ScanKV.Bounds) to where they end — a prefix listing seeks, it does not
// filter the slot's keys.
func (s reader) scanKV(q *meta.ScanKV) (*meta.KVPage, error) {
	if err := s.checkOwnedRange(q.FromSlot, q.ToSlot); err != nil {
		return nil, err
	}
	limit := scanLimit(q.Limit)
	page := &meta.KVPage{}
	size := 0
	for hs := q.FromSlot; hs <= q.ToSlot && !page.More; hs++ {
		after := ""
		if hs == q.FromSlot {
			after = q.AfterKey
		}
		lo, hi := q.Bounds(after)
		p := meta.TablePrefix(s.cfg.Group, hs, meta.TableKV)
		upper := meta.PrefixEnd(p)
		if hi != "" {
			upper = append(slices.Clip(p), hi...)
		}
		err := scanRange(s.db, append(slices.Clip(p), lo...), upper, func(_, v []byte) (bool, error) {
			if len(page.KVs) == limit || size >= meta.ScanKVPageBytes {
				page.More = true
				return false, nil
			}
			kv, err := meta.DecodeKV(v)
			if err != nil {
				return false, err
			}
			if q.KeysOnly {
				kv.Value = nil
			}
			size += len(kv.Key) + len(kv.Value)
			page.KVs = append(page.KVs, kv)
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return page, nil
}
