package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// Batch writes (issue 28): POST /v1/batch/kv/write puts and deletes up to
// meta.MaxBatchKeys business keys in one request. The operations are split
// by hash slot, each slot's made one meta.WriteKVs, and the slots of one
// group (under the node's routing) proposed together as one
// meta.SlotWrites, all groups at the same time — a command per group, not
// per slot; a slot that left its group meanwhile is proposed again alone,
// where it went. A slot's operations are atomic — all applied at one
// revision, or none when one of their conditions fails — and slots are
// independent of each other. Every operation gets its own answer, in
// request order. An operation that is not valid (its op, key or value) is
// answered invalid_argument and keeps the rest of its slot from being
// written (they answer aborted), as a failed condition does.
//
// With an Idempotency-Key every slot's command carries a key derived from
// it and its slot: a retried request applies each slot once and answers
// what the first applied (Idempotent-Replayed when every slot replayed).

// batchWriteRequest is the body of POST /v1/batch/kv/write.
type batchWriteRequest struct {
	Ops []batchKVOpJSON `json:"ops" validate:"required,min=1"`
}

// batchKVOpJSON is one operation: a put of value, or a delete, under at
// most one condition (the key at revision if_match, absent, or present).
type batchKVOpJSON struct {
	Op       string  `json:"op"`
	Key      string  `json:"key"`
	Value    *string `json:"value,omitempty"`
	IfMatch  *uint64 `json:"if_match,omitempty"`
	IfAbsent bool    `json:"if_absent,omitempty"`
	IfExists bool    `json:"if_exists,omitempty"`
}

// batchWriteItemJSON is one operation's answer: applied at revision (a
// delete says whether the key existed), or its error.
type batchWriteItemJSON struct {
	Key      string     `json:"key"`
	Op       string     `json:"op"`
	OK       bool       `json:"ok"`
	Revision uint64     `json:"revision,omitempty"`
	Existed  *bool      `json:"existed,omitempty"`
	Error    *errorJSON `json:"error,omitempty"`
}

type batchWriteJSON struct {
	Items []batchWriteItemJSON `json:"items"`
}

// batchWriteKV is POST /v1/batch/kv/write.
func (a kvRoutes) batchWriteKV(w http.ResponseWriter, r *http.Request) error {
	idemKey, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	var req batchWriteRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Ops) > meta.MaxBatchKeys {
		return slotstore.Errorf(slotstore.CodePayloadTooLarge, "%d operations: a batch writes at most %d", len(req.Ops), meta.MaxBatchKeys)
	}
	out := batchWriteJSON{Items: make([]batchWriteItemJSON, len(req.Ops))}
	slots := map[slotstore.HashSlot][]int{} // slot → its operations, in order
	ops := make([]meta.KVOp, len(req.Ops))
	bad := map[slotstore.HashSlot]bool{}
	for i, o := range req.Ops {
		out.Items[i].Key, out.Items[i].Op = o.Key, o.Op
		hs := slotstore.HashSlotOfString(o.Key)
		slots[hs] = append(slots[hs], i)
		var e *slotstore.Error
		ops[i], e = kvOp(o)
		if e != nil {
			out.Items[i].Error = itemError(e)
			bad[hs] = true
		}
	}
	// The valid slots, by group under the node's routing: one SlotWrites a
	// group (in chunks of at most maxSlotWritesBytes), a slot alone as a
	// WriteKVs.
	var chunks [][]slotstore.HashSlot
	byGroup := map[slotstore.GroupID][]slotstore.HashSlot{}
	var tbl *routing.Table
	if snap, err := a.snapshot(); err == nil {
		tbl = snap.Table()
	}
	for hs, idx := range slots {
		if bad[hs] {
			for _, i := range idx {
				if out.Items[i].Error == nil {
					out.Items[i].Error = itemError(slotstore.Errorf(slotstore.CodeAborted, "not applied: another operation of hash slot %d is not valid", hs))
				}
			}
			continue
		}
		if tbl == nil {
			chunks = append(chunks, []slotstore.HashSlot{hs})
			continue
		}
		g := tbl.Group(hs)
		byGroup[g] = append(byGroup[g], hs)
	}
	for _, group := range byGroup {
		slices.Sort(group)
		size, from := 0, 0
		for j, hs := range group {
			n := opsBytes(ops, slots[hs])
			if j > from && size+n > maxSlotWritesBytes {
				chunks, size, from = append(chunks, group[from:j]), 0, j
			}
			size += n
		}
		chunks = append(chunks, group[from:])
	}
	var (
		wg                 sync.WaitGroup
		mu                 sync.Mutex
		proposed, replayed int
	)
	count := func(res meta.Result, err error) {
		mu.Lock()
		proposed++
		if err == nil && res.Replayed {
			replayed++
		}
		mu.Unlock()
	}
	for _, chunk := range chunks {
		wg.Go(func() {
			if len(chunk) == 1 {
				res, err := a.proposeSlot(r, idemKey, chunk[0], ops, slots[chunk[0]])
				count(res, err)
				a.answerSlot(out.Items, slots[chunk[0]], res, err)
				return
			}
			cmd := &meta.SlotWrites{Parts: make([]meta.WriteKVs, len(chunk))}
			for j, hs := range chunk {
				cmd.Parts[j] = slotWrite(idemKey, hs, ops, slots[hs])
			}
			res, _, err := a.be.Propose(r.Context(), cmd)
			var parts []meta.Result
			if err == nil {
				if err = res.Err(); err == nil {
					if parts, err = meta.DecodeResults(res.Value); err == nil && len(parts) != len(chunk) {
						err = internalf("a write of %d slots answered %d", len(chunk), len(parts))
					}
				}
			}
			for j, hs := range chunk {
				if err != nil {
					count(meta.Result{}, err)
					a.answerSlot(out.Items, slots[hs], meta.Result{}, err)
					continue
				}
				pr := parts[j]
				// A slot that left the group (or is being handed over) since
				// the routing was read: asked alone, where it is now.
				if pr.Code == slotstore.CodeWrongGroup || pr.Code == slotstore.CodeSlotMigrating {
					var perr error
					pr, perr = a.proposeSlot(r, idemKey, hs, ops, slots[hs])
					count(pr, perr)
					a.answerSlot(out.Items, slots[hs], pr, perr)
					continue
				}
				count(pr, nil)
				a.answerSlot(out.Items, slots[hs], pr, nil)
			}
		})
	}
	wg.Wait()
	if proposed > 0 && replayed == proposed {
		w.Header().Set(hdrReplayed, "true")
	}
	a.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// maxSlotWritesBytes bounds what one SlotWrites carries (its operations'
// keys and values): well under a Raft entry's bound, about one proposer
// batch; a group's share past it is sent as several.
const maxSlotWritesBytes = 1 << 20

// opsBytes is about what ops at idx weigh encoded.
func opsBytes(ops []meta.KVOp, idx []int) int {
	n := 0
	for _, i := range idx {
		n += len(ops[i].Key) + len(ops[i].Value) + 16
	}
	return n
}

// slotWrite is the WriteKVs of slot hs: its operations at idx, under the
// key derived from the request's.
func slotWrite(idemKey string, hs slotstore.HashSlot, ops []meta.KVOp, idx []int) meta.WriteKVs {
	w := meta.WriteKVs{Ops: make([]meta.KVOp, len(idx))}
	for j, i := range idx {
		w.Ops[j] = ops[i]
	}
	w.HashSlot, w.IdempotencyKey = hs, slotIdempotencyKey(idemKey, hs)
	return w
}

// proposeSlot proposes slot hs's operations alone, as a WriteKVs.
func (a kvRoutes) proposeSlot(r *http.Request, idemKey string, hs slotstore.HashSlot, ops []meta.KVOp, idx []int) (meta.Result, error) {
	cmd := slotWrite(idemKey, hs, ops, idx)
	res, _, err := a.be.Propose(r.Context(), &cmd)
	return res, err
}

// answerSlot fills the items of one slot's operations from its command's
// outcome.
func (a kvRoutes) answerSlot(items []batchWriteItemJSON, idx []int, res meta.Result, err error) {
	if err == nil {
		err = res.Err()
	}
	var results *meta.KVWriteResults
	if err == nil {
		if results, err = meta.DecodeKVWriteResults(res.Value); err == nil && len(results.Items) != len(idx) {
			err = internalf("a batch write of %d operations answered %d", len(idx), len(results.Items))
		}
	}
	for j, i := range idx {
		if err != nil {
			items[i].Error = itemError(toError(err))
			continue
		}
		it := results.Items[j]
		if it.Code != "" {
			items[i].Error = itemError(&slotstore.Error{Code: it.Code, Message: it.Message})
			items[i].Revision = it.Revision
			continue
		}
		items[i].OK, items[i].Revision = true, it.Revision
		if items[i].Op == "delete" {
			existed := it.Existed
			items[i].Existed = &existed
		}
	}
}

// kvOp checks one operation of a batch and makes it a meta.KVOp.
func kvOp(o batchKVOpJSON) (meta.KVOp, *slotstore.Error) {
	op := meta.KVOp{Key: o.Key}
	if p := keyProblem(o.Key); p != "" {
		return op, invalid("key: %s", p)
	}
	switch o.Op {
	case "put":
		if o.Value == nil {
			return op, invalid("a put needs a value")
		}
		if len(*o.Value) > meta.MaxValueBytes {
			return op, invalid("value: %d bytes, at most %d", len(*o.Value), meta.MaxValueBytes)
		}
		op.Value = []byte(*o.Value)
	case "delete":
		if o.Value != nil {
			return op, invalid("a delete takes no value")
		}
		op.Delete = true
	default:
		return op, invalid(`op %q: "put" or "delete"`, o.Op)
	}
	n := 0
	if o.IfMatch != nil {
		if *o.IfMatch == 0 {
			return op, invalid("if_match: a revision, at least 1")
		}
		op.Cond, n = meta.Cond{Kind: meta.CondIfRevision, Revision: *o.IfMatch}, n+1
	}
	if o.IfAbsent {
		op.Cond, n = meta.Cond{Kind: meta.CondIfAbsent}, n+1
	}
	if o.IfExists {
		op.Cond, n = meta.Cond{Kind: meta.CondIfExists}, n+1
	}
	if n > 1 {
		return op, invalid("at most one of if_match, if_absent and if_exists")
	}
	return op, nil
}

// slotIdempotencyKey derives a slot's command key from the request's ("":
// none): the key, a tab and the slot, or — too long for that — its hash,
// a tab and the slot. A client's own key is printable ASCII
// (idempotencyKey), so no key a client sends can be a derived one.
func slotIdempotencyKey(key string, hs slotstore.HashSlot) string {
	if key == "" {
		return ""
	}
	if k := fmt.Sprintf("%s\t%d", key, hs); len(k) <= meta.MaxIdempotencyKeyBytes {
		return k
	}
	sum := sha256.Sum256([]byte(key))
	return fmt.Sprintf("%s\t%d", hex.EncodeToString(sum[:]), hs)
}
