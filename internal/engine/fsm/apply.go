package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// applier applies the commands of one Update into one batch. It carries the
// counters that Update persists once at the end. The commands of each
// resource family are applied by a small type of its own that holds the
// applier (userApplier, channelApplier, slotApplier, …); they read and write
// only through the applier's get, set, del and delPrefix, so every change of
// the batch passes through here (and into a tracked slot's change log).
type applier struct {
	sm                   *StateMachine
	b                    *pebble.Batch
	revision             uint64
	dedupHead, dedupTail uint64
	owned, fenced        meta.SlotSet                           // this Update's view; persisted and published at commit
	tracked              meta.SlotSet                           // slots whose changes go to their change log (slotmove.go)
	tracking             bool                                   // any slot tracked: set and del look at the key
	index                uint64                                 // the Raft index of the entry being applied
	seq                  uint32                                 // changes logged for that entry so far
	timeMs               int64                                  // the time of the command being applied (its header's)
	batch                uint64                                 // the sequence of its first numbered change (0: none yet)
	heads                map[slotstore.HashSlot]*meta.WatchHead // change-log heads read or moved by this Update (watchlog.go)
	changes              []watch.Record                         // numbered changes, published after commit
	last                 lastRow                                // the last row read or written (get)
	ahead                map[string][]byte                      // business-key rows read ahead for a SlotWrites' parts (batchwrite.go; nil value: absent)
	forgotHeads          []slotstore.HashSlot                   // slots whose kept heads are stale (forgetHead)
	slotsChanged         bool
	checks               []uint64 // state checks the entry being applied asked for (check.go)
	checkAtMs            int64    // when the first of them was proposed (its header's time)
	err                  error    // first storage error; Update fails with it
}

// applyEntry applies every command of one entry and encodes their results.
func (a *applier) applyEntry(data []byte) sm.Result {
	cmds, err := meta.DecodeEntry(data)
	if err != nil {
		res := []meta.Result{{Code: slotstore.CodeInvalidArgument, Message: "malformed entry: " + err.Error()}}
		return sm.Result{Value: 0, Data: meta.EncodeResults(res)}
	}
	results := make([]meta.Result, len(cmds))
	for i, raw := range cmds {
		results[i] = a.applyCommand(raw)
	}
	return sm.Result{Value: uint64(len(cmds)), Data: meta.EncodeResults(results)}
}

func (a *applier) applyCommand(raw []byte) meta.Result {
	c, err := meta.DecodeCommand(raw)
	if err != nil {
		return meta.Result{Code: slotstore.CodeInvalidArgument, Message: "malformed command: " + err.Error()}
	}
	h := c.Head()
	a.timeMs, a.batch = h.TimeMs, 0
	switch c := c.(type) {
	case meta.SlotCommand:
		return slotApplier{a}.applySlotCommand(c)
	case *meta.SlotWrites:
		return a.applySlotWrites(c)
	case *meta.CheckState:
		return a.applyCheck(c)
	}
	return a.applyOne(c)
}

// applyOne applies a data command of one hash slot: its slot owned here
// and not fenced, replayed from its idempotency record if it has one.
func (a *applier) applyOne(c meta.Command) meta.Result {
	h := c.Head()
	if _, ok := c.(*meta.Noop); !ok && slotstore.HashSlotOfString(c.RouteKey()) != h.HashSlot {
		return meta.Result{Code: slotstore.CodeInvalidArgument,
			Message: fmt.Sprintf("route key hashes to slot %d, command names %d", slotstore.HashSlotOfString(c.RouteKey()), h.HashSlot)}
	}
	if !a.owned.Has(h.HashSlot) {
		return meta.Result{Code: slotstore.CodeWrongGroup,
			Message: fmt.Sprintf("group %d does not own hash slot %d", a.sm.cfg.Group, h.HashSlot)}
	}
	if _, noop := c.(*meta.Noop); !noop && a.fenced.Has(h.HashSlot) {
		return meta.Result{Code: slotstore.CodeSlotMigrating,
			Message: fmt.Sprintf("hash slot %d is migrating out of group %d; retry", h.HashSlot, a.sm.cfg.Group)}
	}
	if h.IdempotencyKey == "" {
		return a.dispatch(c)
	}
	fp := meta.Fingerprint(c)
	dkey := meta.DedupKey(a.sm.cfg.Group, h.HashSlot, h.IdempotencyKey)
	if rec, found := a.get(dkey); found {
		if len(rec) < 16+8 || [16]byte(rec[:16]) != fp {
			return meta.Result{Code: slotstore.CodeConflict, Message: "idempotency key was used for a different request"}
		}
		r, err := meta.DecodeResult(rec[24:])
		if err != nil {
			return meta.Result{Code: slotstore.CodeInternal, Message: "corrupt idempotency record"}
		}
		r.Replayed = true
		return r
	}
	r := a.dispatch(c)
	if r.Code.Retryable() {
		// Nothing was done and the client is told to come back: a retry
		// under the same key must be applied then, not answered from here.
		return r
	}
	a.remember(dkey, fp, h, &r)
	return r
}

func (a *applier) dispatch(c meta.Command) meta.Result {
	if f, ok := appliers[c.Op()]; ok {
		return f(a, c)
	}
	return meta.Result{Code: slotstore.CodeInvalidArgument, Message: fmt.Sprintf("op %d cannot be applied", c.Op())}
}

// nextRevision assigns the group revision of a successful change.
func (a *applier) nextRevision() uint64 {
	a.revision++
	return a.revision
}

// get reads a key through the batch (seeing this Update's earlier writes).
// The last key read or written is remembered: a command reads the row it
// is about to change, and del (set, for tables that keep the previous
// value) reads it again for the change log — a batch Get costs an iterator
// over the whole store. Callers never modify what get returns.
func (a *applier) get(key []byte) ([]byte, bool) {
	if a.last.key != nil && bytes.Equal(key, a.last.key) {
		return a.last.value, a.last.found
	}
	v, found, err := store.Get(a.b, key)
	if err != nil {
		a.fail(err)
	}
	a.remember1(key, v, found)
	return v, found
}

// getEach reads keys — sorted, distinct — through the batch with one
// iterator, calling found with each present key's index and value (a copy):
// a command that reads many rows costs one iterator's setup instead of a
// Get's each (get), and a missing key is a bloom filter's check per level
// (SeekPrefixGE), not a read of its blocks.
func (a *applier) getEach(keys [][]byte, found func(i int, value []byte)) {
	if len(keys) == 0 {
		return
	}
	// L6's filters too (pebble reads them only when asked): a batch's keys
	// are often new, and most of a store's data lives in L6.
	it, err := a.b.NewIter(&pebble.IterOptions{LowerBound: keys[0], UpperBound: after(keys[len(keys)-1]), UseL6Filters: true})
	if err != nil {
		a.fail(err)
		return
	}
	for i, k := range keys {
		if !it.SeekPrefixGE(k) || !bytes.Equal(it.Key(), k) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			a.fail(err)
			break
		}
		found(i, bytes.Clone(v))
	}
	if err := it.Close(); err != nil {
		a.fail(err)
	}
}

// lastRow is the one row the applier remembers (get).
type lastRow struct {
	key, value []byte
	found      bool
}

func (a *applier) remember1(key, value []byte, found bool) {
	a.last = lastRow{key: append(a.last.key[:0], key...), value: value, found: found}
}

// set writes a row; a watched one is numbered (watchlog.go), with the value
// it replaces where its table keeps it.
func (a *applier) set(key, value []byte) {
	hs, t, pk, watched := a.watched(key)
	if !watched {
		a.put(key, value)
		return
	}
	var prev []byte
	if t.KeepsPrev() {
		prev, _ = a.get(key)
	}
	a.put(key, value)
	a.record(hs, meta.Change{Kind: meta.ChangePut, Table: t, Key: pk, Value: value, Prev: prev})
}

// del deletes a row; a watched one that existed is numbered.
func (a *applier) del(key []byte) {
	hs, t, pk, watched := a.watched(key)
	if !watched {
		a.drop(key)
		return
	}
	prev, found := a.get(key)
	a.drop(key)
	if !t.KeepsPrev() {
		prev = nil
	}
	if found {
		a.record(hs, meta.Change{Kind: meta.ChangeDelete, Table: t, Key: pk, Prev: prev})
	}
}

// put writes key as it is (not numbered): imported rows, the change log's
// own rows, and set's write. A tracked slot's change log still lists it.
func (a *applier) put(key, value []byte) {
	if err := a.b.Set(key, value, nil); err != nil {
		a.fail(err)
	}
	a.remember1(key, value, true)
	if a.tracking {
		a.logChange(key)
	}
}

// drop is put's delete.
func (a *applier) drop(key []byte) {
	if err := a.b.Delete(key, nil); err != nil {
		a.fail(err)
	}
	a.remember1(key, nil, false)
	if a.tracking {
		a.logChange(key)
	}
}

func (a *applier) fail(err error) {
	if a.err == nil {
		a.err = fmt.Errorf("fsm: group %d: %w", a.sm.cfg.Group, err)
	}
}

// remember stores an idempotency record (fingerprint | time | result) and
// appends it to the group's FIFO, evicting records past capacity or TTL.
// wrong_group and malformed commands never get here: their answer is not
// final for the request.
func (a *applier) remember(dkey []byte, fp [16]byte, h *meta.Header, r *meta.Result) {
	rec := make([]byte, 0, 24+len(r.Value)+32)
	rec = append(rec, fp[:]...)
	rec = binary.BigEndian.AppendUint64(rec, uint64(h.TimeMs))
	rec = append(rec, meta.EncodeResult(r)...)
	a.set(dkey, rec)
	g := a.sm.cfg.Group
	a.set(meta.DedupLogKey(g, a.dedupTail), dkey)
	a.dedupTail++
	// Evict at most two per insert: enough to shrink back under the bound,
	// and a bounded amount of work per command.
	ttl := a.sm.cfg.DedupTTL.Milliseconds()
	for i := 0; i < 2 && a.dedupHead < a.dedupTail; i++ {
		over := a.dedupTail-a.dedupHead > uint64(a.sm.cfg.DedupCapacity)
		logKey := meta.DedupLogKey(g, a.dedupHead)
		oldKey, ok := a.get(logKey)
		if !ok {
			a.dedupHead++
			continue
		}
		expired := false
		if old, found := a.get(oldKey); found && len(old) >= 24 {
			expired = h.TimeMs-int64(binary.BigEndian.Uint64(old[16:24])) > ttl
		}
		if !over && !expired {
			break
		}
		a.del(oldKey)
		a.del(logKey)
		a.dedupHead++
	}
}
