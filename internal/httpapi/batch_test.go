package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
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
