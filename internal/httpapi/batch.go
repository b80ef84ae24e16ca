package httpapi

import (
	"context"
	"net/http"
	"sync"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// Batch reads (issue 28): POST /v1/batch/kv/get reads up to
// meta.MaxBatchKeys business keys in one request. The keys are split by
// group under one routing snapshot and each group is asked once, all
// groups at the same time: a read round per group, not per key. Every key
// gets its own answer, in request order — its row, "not found", or an
// error of its own (a key that is not a valid key, a group that cannot be
// read now) — and the request succeeds whenever it could be read at all.
// A key whose hash slot moved between the snapshot and the read is asked
// once more under the newer routing; still moving, it is answered
// route_not_ready (retryable).

// batchGetRequest is the body of a batch read.
type batchGetRequest struct {
	Keys []string `json:"keys" validate:"required,min=1"`
}

// batchKVItemJSON is one key's answer: found with its value and revision,
// not found, or an error.
type batchKVItemJSON struct {
	Key      string     `json:"key"`
	Found    bool       `json:"found"`
	Value    *string    `json:"value,omitempty"`
	Revision uint64     `json:"revision,omitempty"`
	Error    *errorJSON `json:"error,omitempty"`
}

// batchKVGetJSON is a batch read's answer.
type batchKVGetJSON struct {
	RouteRevision uint64            `json:"route_revision"` // of the snapshot the keys were split under
	Items         []batchKVItemJSON `json:"items"`
}

// batchGetKV is POST /v1/batch/kv/get.
func (a kvRoutes) batchGetKV(w http.ResponseWriter, r *http.Request) error {
	c, err := consistencyParam(r.URL.Query())
	if err != nil {
		return err
	}
	var req batchGetRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Keys) > meta.MaxBatchKeys {
		return slotstore.Errorf(slotstore.CodePayloadTooLarge, "%d keys: a batch reads at most %d", len(req.Keys), meta.MaxBatchKeys)
	}
	snap, err := a.snapshot()
	if err != nil {
		return err
	}
	if snap.Table() == nil {
		return slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing table yet")
	}
	out := batchKVGetJSON{RouteRevision: snap.Revision(), Items: make([]batchKVItemJSON, len(req.Keys))}
	var pending []int
	for i, k := range req.Keys {
		out.Items[i].Key = k
		if p := keyProblem(k); p != "" {
			out.Items[i].Error = itemError(invalid("key: %s", p))
			continue
		}
		pending = append(pending, i)
	}
	// A round reads every pending key; a key whose slot moved is asked once
	// more under a newer snapshot, a key past a group's answer bound
	// (BatchNotRead: every answer reads one key at least) until it is read.
	for moves := 0; len(pending) > 0; {
		moved, unread := a.readKVs(r.Context(), snap, c, req.Keys, pending, out.Items, moves == 1)
		if len(moved) > 0 {
			moves++
			if snap, err = a.snapshot(); err != nil {
				return err
			}
		}
		pending = append(moved, unread...)
	}
	a.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// readKVs reads the keys at indexes idx, one query per group of snap, all
// groups at once, into items. It returns the indexes of keys whose slot the
// answering group did not own (moved since snap) — or, last, answers them
// route_not_ready — and of keys its answer had no room for.
func (a kvRoutes) readKVs(ctx context.Context, snap *routing.Snapshot, c meta.Consistency, keys []string, idx []int, items []batchKVItemJSON, last bool) (moved, unread []int) {
	byGroup := map[slotstore.GroupID][]int{}
	for _, i := range idx {
		g := snap.Table().Group(slotstore.HashSlotOfString(keys[i]))
		byGroup[g] = append(byGroup[g], i)
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, in := range byGroup {
		wg.Go(func() {
			q := &meta.GetKVs{HashSlot: slotstore.HashSlotOfString(keys[in[0]]), Keys: make([]string, len(in))}
			for j, i := range in {
				q.Keys[j] = keys[i]
			}
			res, _, err := meta.Read(ctx, a.be, q, c)
			if err == nil && (res == nil || len(res.Items) != len(in)) {
				err = internalf("a batch read of %d keys answered %v", len(in), res)
			}
			for j, i := range in {
				switch {
				case err != nil:
					items[i].Error = itemError(toError(err))
				case res.Items[j].State == meta.BatchWrongGroup && last:
					items[i].Error = itemError(slotstore.Errorf(slotstore.CodeRouteNotReady,
						"the hash slot of key %q moved while the batch was read: ask again", keys[i]))
				case res.Items[j].State == meta.BatchWrongGroup:
					mu.Lock()
					moved = append(moved, i)
					mu.Unlock()
				case res.Items[j].State == meta.BatchNotRead:
					mu.Lock()
					unread = append(unread, i)
					mu.Unlock()
				case res.Items[j].State == meta.BatchFound && res.Items[j].KV != nil:
					kv := res.Items[j].KV
					v := string(kv.Value)
					items[i].Found, items[i].Value, items[i].Revision = true, &v, kv.Revision
				}
			}
		})
	}
	wg.Wait()
	return moved, unread
}

// itemError is the error JSON of one item of a batch.
func itemError(e *slotstore.Error) *errorJSON {
	j := errorJSONOf(e)
	return &j
}
