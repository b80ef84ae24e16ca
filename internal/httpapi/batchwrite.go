package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Batch writes (issue 28): POST /v1/batch/kv/write puts and deletes up to
// meta.MaxBatchKeys business keys in one request. The operations are split
// by hash slot and each slot's are proposed as one meta.WriteKVs, all slots
// at the same time; a slot's operations are atomic — all applied at one
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
	var (
		wg                 sync.WaitGroup
		mu                 sync.Mutex
		proposed, replayed int
	)
	for hs, idx := range slots {
		if bad[hs] {
			for _, i := range idx {
				if out.Items[i].Error == nil {
					out.Items[i].Error = itemError(slotstore.Errorf(slotstore.CodeAborted, "not applied: another operation of hash slot %d is not valid", hs))
				}
			}
			continue
		}
		wg.Go(func() {
			cmd := &meta.WriteKVs{Ops: make([]meta.KVOp, len(idx))}
			for j, i := range idx {
				cmd.Ops[j] = ops[i]
			}
			cmd.IdempotencyKey = slotIdempotencyKey(idemKey, hs)
			res, _, err := a.be.Propose(r.Context(), cmd)
			mu.Lock()
			proposed++
			if err == nil && res.Replayed {
				replayed++
			}
			mu.Unlock()
			a.answerSlot(out.Items, idx, res, err)
		})
	}
	wg.Wait()
	if proposed > 0 && replayed == proposed {
		w.Header().Set(hdrReplayed, "true")
	}
	a.writeJSON(w, r, http.StatusOK, out)
	return nil
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
