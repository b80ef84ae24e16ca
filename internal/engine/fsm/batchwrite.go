package fsm

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// writeKVs applies meta.WriteKVs, all or none: first every operation's
// condition is checked in order, each against the row as the operations
// before it leave it (a row they wrote has no revision yet: a condition on
// its revision fails); one failing, nothing is written — the failed ones
// answer failed_precondition, the others aborted. Otherwise every
// operation is applied at one revision. The result value holds an item
// per operation; the command itself always succeeds (its refusals are the
// items').
func (a kvApplier) writeKVs(c *meta.WriteKVs) meta.Result {
	out := &meta.KVWriteResults{Items: make([]meta.KVWriteResult, len(c.Ops))}
	// Each row is read from the store once: before holds the rows as the
	// command found them, rows each pass's view as its operations so far
	// leave them (nil: absent).
	before := a.kvRowsOf(c)
	rows := map[string]*meta.KV{}
	row := func(k string) *meta.KV {
		if r, ok := rows[k]; ok {
			return r
		}
		return before[k]
	}
	failed := false
	for i, op := range c.Ops {
		if hs := slotstore.HashSlotOfString(op.Key); hs != c.HashSlot {
			out.Items[i] = meta.KVWriteResult{Code: slotstore.CodeInvalidArgument, Message: fmt.Sprintf("key %q is of hash slot %d, the batch of %d", op.Key, hs, c.HashSlot)}
			failed = true
			continue
		}
		cur := row(op.Key)
		if ok, why := checkCond(op.Cond, cur); !ok {
			out.Items[i] = meta.KVWriteResult{Code: slotstore.CodeFailedPrecondition, Message: why, Revision: revisionOf(cur)}
			failed = true
			continue
		}
		if op.Delete {
			rows[op.Key] = nil
		} else {
			rows[op.Key] = &meta.KV{Key: op.Key} // written: no revision yet
		}
	}
	if failed {
		for i := range out.Items {
			if out.Items[i].Code == "" {
				out.Items[i] = meta.KVWriteResult{Code: slotstore.CodeAborted, Message: "not applied: another operation of this hash slot's batch failed"}
			}
		}
		return meta.Result{Value: meta.EncodeKVWriteResults(out)}
	}
	rev := a.nextRevision()
	clear(rows) // the apply pass starts again from before
	for i, op := range c.Ops {
		key := meta.KVKey(a.sm.cfg.Group, c.HashSlot, op.Key)
		cur := row(op.Key)
		out.Items[i] = meta.KVWriteResult{Revision: rev, Existed: cur != nil}
		if op.Delete {
			if cur != nil {
				a.del(key)
			}
			rows[op.Key] = nil
			continue
		}
		kv := &meta.KV{Key: op.Key, Value: op.Value, UpdatedAtMs: c.TimeMs, Revision: rev, CreateRevision: rev}
		if cur != nil {
			kv.CreateRevision = cur.CreateRevision
		}
		a.set(key, meta.EncodeKV(kv))
		rows[op.Key] = kv
	}
	return meta.Result{Revision: rev, Value: meta.EncodeKVWriteResults(out)}
}

// kvRowsOf reads the rows of c's keys of its hash slot as the command finds
// them (nil: absent), with one iterator for them all (getEach).
func (a kvApplier) kvRowsOf(c *meta.WriteKVs) map[string]*meta.KV {
	rows := make(map[string]*meta.KV, len(c.Ops))
	prefix := len(meta.TablePrefix(a.sm.cfg.Group, c.HashSlot, meta.TableKV))
	decode := func(key, v []byte) {
		kv, err := meta.DecodeKV(v)
		if err != nil {
			a.fail(fmt.Errorf("fsm: business key %q: %w", key[prefix:], err))
			return
		}
		rows[string(key[prefix:])] = kv
	}
	var keys [][]byte
	for _, key := range kvKeysOf(a.sm.cfg.Group, c) {
		rows[string(key[prefix:])] = nil
		if v, ok := a.ahead[string(key)]; ok {
			// Read ahead (applySlotWrites) and used once: a part of the same
			// slot later in the command reads what this one wrote.
			delete(a.ahead, string(key))
			if v != nil {
				decode(key, v)
			}
			continue
		}
		keys = append(keys, key)
	}
	a.getEach(keys, func(i int, v []byte) { decode(keys[i], v) })
	return rows
}

// kvKeysOf is the store keys of c's business keys of its own slot, each
// once, sorted.
func kvKeysOf(g slotstore.GroupID, c *meta.WriteKVs) [][]byte {
	seen := make(map[string]bool, len(c.Ops))
	keys := make([][]byte, 0, len(c.Ops))
	for _, op := range c.Ops {
		if !seen[op.Key] && slotstore.HashSlotOfString(op.Key) == c.HashSlot {
			seen[op.Key] = true
			keys = append(keys, meta.KVKey(g, c.HashSlot, op.Key))
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

func revisionOf(kv *meta.KV) uint64 {
	if kv == nil {
		return 0
	}
	return kv.Revision
}

// readAhead reads the rows of every part's business keys with one
// iterator, into a.ahead: a batch of 100 new keys is about 80 parts of one
// key or two, and an iterator's setup and teardown (its files' iterators,
// the merging iterator) cost more than its seeks. The parts' keys are of
// their own slots, which no other part of the command writes — but for a
// slot's part given twice, which kvRowsOf handles by using each row read
// ahead once.
func (a *applier) readAhead(c *meta.SlotWrites) {
	var keys [][]byte
	for i := range c.Parts {
		keys = append(keys, kvKeysOf(a.sm.cfg.Group, &c.Parts[i])...)
	}
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	a.ahead = make(map[string][]byte, len(keys))
	for _, k := range keys {
		a.ahead[string(k)] = nil
	}
	a.getEach(keys, func(i int, v []byte) { a.ahead[string(keys[i])] = v })
}

// applySlotWrites applies each part of meta.SlotWrites as applyOne applies
// a lone WriteKVs — its slot's checks, its idempotency record, its own
// revision and change batch — and answers an item per part. The command
// itself always succeeds; its refusals are the parts'.
func (a *applier) applySlotWrites(c *meta.SlotWrites) meta.Result {
	a.readAhead(c)
	defer func() { a.ahead = nil }()
	results := make([]meta.Result, len(c.Parts))
	for i := range c.Parts {
		p := &c.Parts[i]
		p.TimeMs = c.TimeMs
		a.batch = 0 // each part's changes are numbered as its own command's
		results[i] = a.applyOne(p)
	}
	return meta.Result{Value: meta.EncodeResults(results)}
}
