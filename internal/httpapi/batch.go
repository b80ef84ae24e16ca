package httpapi

import (
	"context"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// Batch reads (issue 28): POST /v1/batch/{kv,users,channels,runtime}/get
// read up to meta.MaxBatchKeys rows of one kind in one request. The keys
// are split by group under one routing snapshot and each group is asked
// once (one meta.GetRows), all groups in one call to the node, which reads
// the parts its replicas hold together (their read rounds side by side,
// then one view of its store): a read round per group, not per key. Every key gets its own
// answer, in request order — its row, "not found", or an error of its own
// (a key that is not valid, a group that cannot be read now) — and the
// request succeeds whenever it could be read at all. A key whose hash slot
// moved between the snapshot and the read is asked once more under the
// newer routing; still moving, it is answered route_not_ready (retryable).

// batchGet is one kind of row a batch reads: its table, and the row type
// that decodes and shows it.
type batchGet[K, E, J any] struct {
	table meta.Table
	rw    row[K, E, J]
	ref   func(K) meta.RowRef
}

var (
	kvBatch      = batchGet[string, meta.KV, kvJSON]{meta.TableKV, kvRow, func(k string) meta.RowRef { return meta.RowRef{Key: k} }}
	userBatch    = batchGet[string, meta.User, userJSON]{meta.TableUser, userRow, func(uid string) meta.RowRef { return meta.RowRef{Key: uid} }}
	channelBatch = batchGet[meta.ChanRef, meta.Channel, channelJSON]{meta.TableChannel, channelRow, chanRowRef}
	runtimeBatch = batchGet[meta.ChanRef, meta.ChannelRuntime, runtimeJSON]{meta.TableRuntime, runtimeRow, chanRowRef}
)

func chanRowRef(c meta.ChanRef) meta.RowRef {
	return meta.RowRef{Key: c.ChannelID, ChannelType: c.ChannelType}
}

// batchItem is what a batch read found of one key: the row as the API
// shows it, or nothing (not found), or an error.
type batchItem[J any] struct {
	row *J
	err *errorJSON
}

// read reads keys (an invalid one has its problem in problems[i] and is
// not read) and returns an item per key and the route revision the keys
// were first split under.
func (b batchGet[K, E, J]) read(a *api, r *http.Request, keys []K, problems []string) ([]batchItem[J], uint64, error) {
	c, err := consistencyParam(r.URL.Query())
	if err != nil {
		return nil, 0, err
	}
	if len(keys) > meta.MaxBatchKeys {
		return nil, 0, slotstore.Errorf(slotstore.CodePayloadTooLarge, "%d keys: a batch reads at most %d", len(keys), meta.MaxBatchKeys)
	}
	snap, err := a.snapshot()
	if err != nil {
		return nil, 0, err
	}
	if snap.Table() == nil {
		return nil, 0, slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing table yet")
	}
	rev := snap.Revision()
	items := make([]batchItem[J], len(keys))
	refs := make([]meta.RowRef, len(keys))
	var pending []int
	for i, k := range keys {
		if problems[i] != "" {
			items[i].err = itemError(invalid("%s", problems[i]))
			continue
		}
		refs[i] = b.ref(k)
		pending = append(pending, i)
	}
	// A round reads every pending key; a key whose slot moved is asked once
	// more under a newer snapshot, a key past a group's answer bound
	// (BatchNotRead: every answer reads one key at least) until it is read.
	for moves := 0; len(pending) > 0; {
		moved, unread := b.readRound(r.Context(), a, snap, c, refs, pending, items, moves == 1)
		if len(moved) > 0 {
			moves++
			if snap, err = a.snapshot(); err != nil {
				return nil, 0, err
			}
		}
		pending = append(moved, unread...)
	}
	return items, rev, nil
}

// readRound reads the keys at indexes idx, one query per group of snap,
// all in one call to the node (meta.RowsReader), into items. It returns
// the indexes of keys whose slot the answering group did not own (moved
// since snap) — or, last, answers them route_not_ready — and of keys its
// answer had no room for.
func (b batchGet[K, E, J]) readRound(ctx context.Context, a *api, snap *routing.Snapshot, c meta.Consistency, refs []meta.RowRef, idx []int,
	items []batchItem[J], last bool) (moved, unread []int) {
	byGroup := map[slotstore.GroupID][]int{}
	var order []slotstore.GroupID
	for _, i := range idx {
		g := snap.Table().Group(slotstore.HashSlotOfString(refs[i].Key))
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], i)
	}
	qs := make([]*meta.GetRows, len(order))
	for n, g := range order {
		in := byGroup[g]
		q := &meta.GetRows{HashSlot: slotstore.HashSlotOfString(refs[in[0]].Key), Table: b.table, Keys: make([]meta.RowRef, len(in))}
		for j, i := range in {
			q.Keys[j] = refs[i]
		}
		qs[n] = q
	}
	answers := a.be.ReadRows(ctx, qs, c)
	for n, g := range order {
		in := byGroup[g]
		var res *meta.RowBatch
		var err error
		if n < len(answers) {
			res, err = answers[n].Batch, answers[n].Err
		}
		if err == nil && (res == nil || len(res.Items) != len(in)) {
			err = internalf("a batch read of %d keys answered %v", len(in), res)
		}
		for j, i := range in {
			if err != nil {
				items[i].err = itemError(toError(err))
				continue
			}
			switch it := res.Items[j]; it.State {
			case meta.BatchWrongGroup:
				if last {
					items[i].err = itemError(slotstore.Errorf(slotstore.CodeRouteNotReady,
						"the hash slot of key %q moved while the batch was read: ask again", refs[i].Key))
					continue
				}
				moved = append(moved, i)
			case meta.BatchNotRead:
				unread = append(unread, i)
			case meta.BatchFound:
				e, derr := b.rw.decode(it.Row)
				if derr != nil {
					items[i].err = itemError(toError(internalf("a stored %s does not decode: %v", b.rw.noun, derr)))
					continue
				}
				j := b.rw.out(e)
				items[i].row = &j
			}
		}
	}
	return moved, unread
}

// batchGetRequest is the body of a batch read of business keys.
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
	var req batchGetRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	items, rev, err := kvBatch.read(a.api, r, req.Keys, problemsOf(req.Keys, func(k string) string { return prefixed("key", keyProblem(k)) }))
	if err != nil {
		return err
	}
	out := batchKVGetJSON{RouteRevision: rev, Items: make([]batchKVItemJSON, len(items))}
	for i, it := range items {
		out.Items[i] = batchKVItemJSON{Key: req.Keys[i], Error: it.err}
		if it.row != nil {
			out.Items[i].Found, out.Items[i].Value, out.Items[i].Revision = true, &it.row.Value, it.row.Revision
		}
	}
	a.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// problemsOf is problem of every key.
func problemsOf[K any](keys []K, problem func(K) string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = problem(k)
	}
	return out
}

// prefixed is "what: problem", or "" without a problem.
func prefixed(what, problem string) string {
	if problem == "" {
		return ""
	}
	return what + ": " + problem
}

// itemError is the error JSON of one item of a batch.
func itemError(e *slotstore.Error) *errorJSON {
	j := errorJSONOf(e)
	return &j
}
