package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestBatchGetKV: a batch read asks each group once for its keys and
// answers every key in request order — found, not found, a bad key's own
// error, the keys of a group that cannot be read with that group's error —
// asks a key whose slot moved once more, and answers one still moving
// route_not_ready; over 1 000 keys is 413, none is 400.
func TestBatchGetKV(t *testing.T) {
	f := newFake(t, 4)
	h := newHandler(t, f)
	tbl := f.Routes().Table()
	var keys []string
	byGroup := map[slotstore.GroupID][]string{}
	for i := 0; len(keys) < 40; i++ {
		k := fmt.Sprintf("bk-%d", i)
		keys = append(keys, k)
		g := tbl.Group(slotstore.HashSlotOfString(k))
		byGroup[g] = append(byGroup[g], k)
		if i%2 == 0 {
			f.kvs[k] = &meta.KV{Key: k, Value: []byte("v" + k), Revision: uint64(10 + i)}
		}
	}
	if len(byGroup) != 4 {
		t.Fatalf("the keys fell in %d groups", len(byGroup))
	}
	failing := slotstore.GroupID(3)
	f.groupErr = map[slotstore.GroupID]error{failing: slotstore.Errorf(slotstore.CodeRouteNotReady, "group 3 has no leader")}
	once, always := byGroup[1][0], byGroup[2][0]
	f.movedOnce, f.movedAlways = map[string]bool{once: true}, map[string]bool{always: true}
	body, _ := json.Marshal(map[string][]string{"keys": append(append([]string{}, keys...), "", strings.Repeat("x", 600))})
	w := do(t, h, "POST", "/v1/batch/kv/get", string(body))
	if w.Code != http.StatusOK {
		t.Fatalf("batch get: %d %s", w.Code, w.Body)
	}
	var got batchKVGetJSON
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != len(keys)+2 || got.RouteRevision != tbl.Revision() {
		t.Fatalf("%d items, route revision %d", len(got.Items), got.RouteRevision)
	}
	for i, it := range got.Items[:len(keys)] {
		k := keys[i]
		g := tbl.Group(slotstore.HashSlotOfString(k))
		switch {
		case it.Key != k:
			t.Fatalf("item %d is %q, want %q", i, it.Key, k)
		case g == failing:
			if it.Error == nil || it.Error.Code != slotstore.CodeRouteNotReady || !it.Error.Retryable || it.Found {
				t.Errorf("%s of the failing group: %+v", k, it)
			}
		case k == always:
			if it.Error == nil || it.Error.Code != slotstore.CodeRouteNotReady || !it.Error.Retryable {
				t.Errorf("%s, still moving: %+v", k, it)
			}
		case f.kvs[k] != nil:
			if !it.Found || it.Value == nil || *it.Value != "v"+k || it.Revision != f.kvs[k].Revision || it.Error != nil {
				t.Errorf("%s: %+v", k, it)
			}
		default:
			if it.Found || it.Error != nil || it.Value != nil {
				t.Errorf("%s, never written: %+v", k, it)
			}
		}
	}
	for _, it := range got.Items[len(keys):] {
		if it.Error == nil || it.Error.Code != slotstore.CodeInvalidArgument || it.Found {
			t.Errorf("a bad key %.10q…: %+v", it.Key, it)
		}
	}
	// One query per group, then the moved keys again (one query each round
	// for the group that had them).
	if n := len(f.batches); n != 4+2 {
		t.Errorf("%d batch queries, want 4 and 2 for the moved keys", n)
	}
	for _, q := range f.batches {
		if len(q.Keys) > len(byGroup[tbl.Group(q.HashSlot)]) {
			t.Errorf("a query of %d keys for a group of %d", len(q.Keys), len(byGroup[tbl.Group(q.HashSlot)]))
		}
	}

	// Answers with room for three keys each: the rest is asked again
	// until every key is read.
	f.groupErr, f.movedAlways, f.batchRoom, f.batches = nil, nil, 3, nil
	body, _ = json.Marshal(map[string][]string{"keys": keys})
	w = do(t, h, "POST", "/v1/batch/kv/get", string(body))
	got = batchKVGetJSON{}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	for i, it := range got.Items {
		if it.Error != nil || it.Found != (f.kvs[keys[i]] != nil) {
			t.Fatalf("%s with small answers: %+v", keys[i], it)
		}
	}
	if len(f.batches) < len(keys)/3 {
		t.Fatalf("%d queries for %d keys, three a query", len(f.batches), len(keys))
	}

	tooMany := make([]string, meta.MaxBatchKeys+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprint(i)
	}
	body, _ = json.Marshal(map[string][]string{"keys": tooMany})
	if w := do(t, h, "POST", "/v1/batch/kv/get", string(body)); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("%d keys: %d %s", len(tooMany), w.Code, w.Body)
	}
	for _, b := range []string{`{"keys":[]}`, `{}`, `{"keys":["a"],"more":1}`} {
		if w := do(t, h, "POST", "/v1/batch/kv/get", b); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", b, w.Code, w.Body)
		}
	}
	if w := do(t, h, "POST", "/v1/batch/kv/get?consistency=eventual", `{"keys":["a"]}`); w.Code != http.StatusBadRequest {
		t.Errorf("a bad consistency: %d", w.Code)
	}
}

// TestBatchWriteKV: a batch write proposes one command per hash slot and
// answers every operation in order: applied at its slot's revision (a
// delete says whether the key existed), a failed condition with the rest
// of its slot aborted and other slots applied, a bad operation keeping its
// slot from being written; an Idempotency-Key gives each slot a key of its
// own, and the retried request is answered as a replay.
func TestBatchWriteKV(t *testing.T) {
	f := newFake(t, 4)
	h := newHandler(t, f)
	// Three keys of one slot, one of another.
	var same []string
	for i := 0; len(same) < 3; i++ {
		if k := fmt.Sprintf("bw-%d", i); slotstore.HashSlotOfString(k) == slotstore.HashSlotOfString("bw-0") {
			same = append(same, k)
		}
	}
	other := "bw-other"
	for slotstore.HashSlotOfString(other) == slotstore.HashSlotOfString(same[0]) {
		other += "x"
	}
	f.kvs[same[2]] = &meta.KV{Key: same[2], Value: []byte("old"), Revision: 3}
	body := fmt.Sprintf(`{"ops":[{"op":"put","key":%q,"value":"a"},{"op":"put","key":%q,"value":"o"},{"op":"delete","key":%q,"if_match":3},{"op":"put","key":%q,"value":"b","if_absent":true}]}`,
		same[0], other, same[2], same[1])
	w := do(t, h, "POST", "/v1/batch/kv/write", body, "Idempotency-Key", "req-1")
	if w.Code != http.StatusOK || w.Header().Get(hdrReplayed) != "" {
		t.Fatalf("batch write: %d %s", w.Code, w.Body)
	}
	var got batchWriteJSON
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for i, it := range got.Items {
		if !it.OK || it.Error != nil || it.Revision == 0 {
			t.Fatalf("operation %d: %+v", i, it)
		}
	}
	if got.Items[0].Revision != got.Items[2].Revision || got.Items[0].Revision == got.Items[1].Revision || got.Items[2].Existed == nil || !*got.Items[2].Existed {
		t.Fatalf("revisions and existed: %+v", got.Items)
	}
	if len(f.proposed) != 2 {
		t.Fatalf("%d commands proposed, want one per slot (the two slots are of different groups)", len(f.proposed))
	}
	for _, c := range f.proposed {
		hs := slotstore.HashSlotOfString(c.RouteKey())
		if c.Head().IdempotencyKey != fmt.Sprintf("req-1\t%d", hs) {
			t.Fatalf("a slot's idempotency key %q", c.Head().IdempotencyKey)
		}
	}
	if f.kvs[same[2]] != nil || string(f.kvs[same[1]].Value) != "b" {
		t.Fatalf("the rows: %+v", f.kvs)
	}
	// The same request again: a replay, nothing proposed is applied twice.
	rev := f.rev
	w = do(t, h, "POST", "/v1/batch/kv/write", body, "Idempotency-Key", "req-1")
	if w.Code != http.StatusOK || w.Header().Get(hdrReplayed) != "true" || f.rev != rev {
		t.Fatalf("the retry: %d replayed %q, revision %d → %d", w.Code, w.Header().Get(hdrReplayed), rev, f.rev)
	}

	// A failed condition aborts its slot only; a bad operation keeps its
	// slot from being written.
	body = fmt.Sprintf(`{"ops":[{"op":"put","key":%q,"value":"x","if_absent":true},{"op":"put","key":%q,"value":"y"},{"op":"put","key":%q,"value":"z"}]}`,
		same[0], same[1], other)
	w = do(t, h, "POST", "/v1/batch/kv/write", body)
	got = batchWriteJSON{}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if e := got.Items[0].Error; e == nil || e.Code != slotstore.CodeFailedPrecondition || got.Items[0].OK {
		t.Fatalf("the failed condition: %+v", got.Items[0])
	}
	if e := got.Items[1].Error; e == nil || e.Code != slotstore.CodeAborted || string(f.kvs[same[1]].Value) != "b" {
		t.Fatalf("the aborted operation: %+v", got.Items[1])
	}
	if !got.Items[2].OK || string(f.kvs[other].Value) != "z" {
		t.Fatalf("the other slot: %+v", got.Items[2])
	}
	proposed := len(f.proposed)
	body = fmt.Sprintf(`{"ops":[{"op":"put","key":%q,"value":"x"},{"op":"upsert","key":%q,"value":"y"},{"op":"delete","key":%q,"value":"v"},{"op":"put","key":%q,"value":"z","if_absent":true,"if_exists":true}]}`,
		same[0], same[1], other, "")
	w = do(t, h, "POST", "/v1/batch/kv/write", body)
	got = batchWriteJSON{}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	want := []slotstore.Code{slotstore.CodeAborted, slotstore.CodeInvalidArgument, slotstore.CodeInvalidArgument, slotstore.CodeInvalidArgument}
	for i, it := range got.Items {
		if it.OK || it.Error == nil || it.Error.Code != want[i] {
			t.Errorf("operation %d: %+v, want %s", i, it, want[i])
		}
	}
	if len(f.proposed) != proposed {
		t.Fatalf("a batch of invalid operations proposed %d commands", len(f.proposed)-proposed)
	}

	tooMany := make([]string, meta.MaxBatchKeys+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`{"op":"delete","key":"k%d"}`, i)
	}
	if w := do(t, h, "POST", "/v1/batch/kv/write", `{"ops":[`+strings.Join(tooMany, ",")+`]}`); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("%d operations: %d %s", len(tooMany), w.Code, w.Body)
	}
	if w := do(t, h, "POST", "/v1/batch/kv/write", `{"ops":[]}`); w.Code != http.StatusBadRequest {
		t.Errorf("no operations: %d", w.Code)
	}
	if k := slotIdempotencyKey(strings.Repeat("k", meta.MaxIdempotencyKeyBytes), 200); len(k) > meta.MaxIdempotencyKeyBytes || k == slotIdempotencyKey(strings.Repeat("k", meta.MaxIdempotencyKeyBytes), 201) {
		t.Fatalf("a long key's slot keys: %q", k)
	}
}

// TestBatchWriteKVOneCommandAGroup: the slots of one group are proposed as
// one SlotWrites, each slot a part under its own derived key; a part whose
// slot left the group is proposed again alone; a retry of the request
// replays every part.
func TestBatchWriteKVOneCommandAGroup(t *testing.T) {
	f := newFake(t, 1)
	h := newHandler(t, f)
	var keys []string
	slots := map[slotstore.HashSlot]bool{}
	for i := 0; len(keys) < 5; i++ {
		k := fmt.Sprintf("g-%d", i)
		if hs := slotstore.HashSlotOfString(k); !slots[hs] {
			slots[hs] = true
			keys = append(keys, k)
		}
	}
	f.slotMovedOnce = map[slotstore.HashSlot]bool{slotstore.HashSlotOfString(keys[3]): true}
	ops := make([]string, len(keys))
	for i, k := range keys {
		ops[i] = fmt.Sprintf(`{"op":"put","key":%q,"value":"v%d"}`, k, i)
	}
	body := `{"ops":[` + strings.Join(ops, ",") + `]}`
	w := do(t, h, "POST", "/v1/batch/kv/write", body, "Idempotency-Key", "grp")
	var got batchWriteJSON
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	for i, it := range got.Items {
		if !it.OK || string(f.kvs[keys[i]].Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("operation %d: %+v", i, it)
		}
	}
	if len(f.proposed) != 2 {
		t.Fatalf("%d commands proposed, want the group's and the moved slot's alone", len(f.proposed))
	}
	sw, ok := f.proposed[0].(*meta.SlotWrites)
	if !ok || len(sw.Parts) != len(keys) {
		t.Fatalf("the group's command: %T %+v", f.proposed[0], f.proposed[0])
	}
	for _, p := range sw.Parts {
		if p.IdempotencyKey != fmt.Sprintf("grp\t%d", p.HashSlot) || len(p.Ops) != 1 {
			t.Fatalf("a part: %+v", p)
		}
	}
	if alone, ok := f.proposed[1].(*meta.WriteKVs); !ok || alone.Ops[0].Key != keys[3] {
		t.Fatalf("the moved slot's command: %T %+v", f.proposed[1], f.proposed[1])
	}
	rev := f.rev
	w = do(t, h, "POST", "/v1/batch/kv/write", body, "Idempotency-Key", "grp")
	if w.Code != http.StatusOK || w.Header().Get(hdrReplayed) != "true" || f.rev != rev {
		t.Fatalf("the retry: %d replayed %q, revision %d → %d: %s", w.Code, w.Header().Get(hdrReplayed), rev, f.rev, w.Body)
	}
}
