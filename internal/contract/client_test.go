package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
)

func ptr[T any](v T) *T { return &v }

// TestGeneratedClient drives users and business keys end to end through the
// Go client generated from the spec (client/client.gen.go), against a real
// node. The client's transport checks every exchange against the spec too.
func TestGeneratedClient(t *testing.T) {
	n := startNode(t)
	c, err := client.NewClientWithResponses(n.url, client.WithHTTPClient(n.client))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	status := func(what string, got, want int, body []byte) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: %d %.300s, want %d", what, got, body, want)
		}
	}

	// Users: create, replay, get, conflict, put, list, delete.
	var extra client.Extra = map[string]any{"lang": "en"}
	created, err := c.CreateUserWithResponse(ctx, &client.CreateUserParams{IdempotencyKey: ptr("client-create-ada")},
		client.UserCreate{Uid: "ada", Name: ptr("Ada"), Extra: &extra})
	must(t, err)
	status("create", created.StatusCode(), http.StatusCreated, created.Body)
	if u := created.JSON201; u == nil || u.Uid != "ada" || u.Name != "Ada" || u.CreatedAtMs == 0 || u.Revision == 0 {
		t.Fatalf("created %+v", created.JSON201)
	}
	if h := created.Headers201; h == nil || h.Location == nil || *h.Location != "/v1/users/ada" || h.XHashSlot == nil {
		t.Fatalf("create headers %+v", created.Headers201)
	}
	replayed, err := c.CreateUserWithResponse(ctx, &client.CreateUserParams{IdempotencyKey: ptr("client-create-ada")},
		client.UserCreate{Uid: "ada", Name: ptr("Ada"), Extra: &extra})
	must(t, err)
	status("replayed create", replayed.StatusCode(), http.StatusCreated, replayed.Body)
	if h := replayed.Headers201; h == nil || h.IdempotentReplayed == nil || *h.IdempotentReplayed != "true" {
		t.Fatalf("replay headers %+v", replayed.Headers201)
	}
	dup, err := c.CreateUserWithResponse(ctx, nil, client.UserCreate{Uid: "ada"})
	must(t, err)
	status("second create", dup.StatusCode(), http.StatusConflict, dup.Body)
	if dup.JSON409 == nil || dup.JSON409.Error.Code != client.ErrorCode("conflict") {
		t.Fatalf("conflict body %+v", dup.JSON409)
	}

	got, err := c.GetUserWithResponse(ctx, "ada", &client.GetUserParams{Consistency: ptr(client.GetUserParamsConsistency("linearizable"))})
	must(t, err)
	status("get", got.StatusCode(), http.StatusOK, got.Body)
	if u := got.JSON200; u == nil || u.Name != "Ada" || u.Extra == nil {
		t.Fatalf("got %+v", got.JSON200)
	} else if b, _ := json.Marshal(*u.Extra); string(b) != `{"lang":"en"}` {
		t.Fatalf("extra %s", b)
	}

	put, err := c.PutUserWithResponse(ctx, "ada", nil, client.UserUpsert{Name: ptr("Ada L.")})
	must(t, err)
	status("put", put.StatusCode(), http.StatusOK, put.Body)
	if u := put.JSON200; u == nil || u.Name != "Ada L." || u.CreatedAtMs != created.JSON201.CreatedAtMs || u.Revision <= created.JSON201.Revision {
		t.Fatalf("put %+v after %+v", put.JSON200, created.JSON201)
	}

	for _, uid := range []string{"alan", "grace", "edsger"} {
		r, err := c.CreateUserWithResponse(ctx, nil, client.UserCreate{Uid: uid})
		must(t, err)
		status("create "+uid, r.StatusCode(), http.StatusCreated, r.Body)
	}
	seen := map[string]bool{}
	params := &client.ListUsersParams{Limit: ptr(2)}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("listing does not end")
		}
		page, err := c.ListUsersWithResponse(ctx, params)
		must(t, err)
		status("list", page.StatusCode(), http.StatusOK, page.Body)
		for _, u := range page.JSON200.Items {
			seen[u.Uid] = true
		}
		if page.JSON200.NextCursor == nil {
			break
		}
		params.Cursor = page.JSON200.NextCursor
	}
	if len(seen) != 4 {
		t.Fatalf("listed %v, want ada, alan, grace, edsger", seen)
	}

	del, err := c.DeleteUserWithResponse(ctx, "ada", nil)
	must(t, err)
	status("delete", del.StatusCode(), http.StatusNoContent, del.Body)
	gone, err := c.GetUserWithResponse(ctx, "ada", nil)
	must(t, err)
	status("get deleted", gone.StatusCode(), http.StatusNotFound, gone.Body)
	if gone.JSON404 == nil || gone.JSON404.Error.Code != client.ErrorCode("not_found") {
		t.Fatalf("not found body %+v", gone.JSON404)
	}

	// Business keys: create-only, compare-and-set with If-Match, get, delete.
	const key = "app/conf" // the client escapes the '/' as %2F
	v1, err := c.PutKVWithResponse(ctx, key, &client.PutKVParams{IfNoneMatch: ptr(client.PutKVParamsIfNoneMatch("*"))}, client.KVWrite{Value: "v1"})
	must(t, err)
	status("put kv", v1.StatusCode(), http.StatusOK, v1.Body)
	if v1.JSON200 == nil || v1.JSON200.Key != key || v1.Headers200 == nil || v1.Headers200.ETag == nil {
		t.Fatalf("put kv %+v %+v", v1.JSON200, v1.Headers200)
	}
	etag := *v1.Headers200.ETag
	v2, err := c.PutKVWithResponse(ctx, key, &client.PutKVParams{IfMatch: &etag}, client.KVWrite{Value: "v2"})
	must(t, err)
	status("compare-and-set", v2.StatusCode(), http.StatusOK, v2.Body)
	if v2.JSON200.Revision <= v1.JSON200.Revision {
		t.Fatalf("revision %d after %d", v2.JSON200.Revision, v1.JSON200.Revision)
	}
	stale, err := c.PutKVWithResponse(ctx, key, &client.PutKVParams{IfMatch: &etag}, client.KVWrite{Value: "v3"})
	must(t, err)
	status("stale compare-and-set", stale.StatusCode(), http.StatusPreconditionFailed, stale.Body)
	if stale.JSON412 == nil || stale.JSON412.Error.Code != client.ErrorCode("failed_precondition") {
		t.Fatalf("412 body %+v", stale.JSON412)
	}
	read, err := c.GetKVWithResponse(ctx, key, nil)
	must(t, err)
	status("get kv", read.StatusCode(), http.StatusOK, read.Body)
	if read.JSON200.Value != "v2" || read.Headers200 == nil || read.Headers200.ETag == nil || *read.Headers200.ETag != *v2.Headers200.ETag {
		t.Fatalf("get kv %+v %+v", read.JSON200, read.Headers200)
	}
	// A batch read across the node's four groups: every key answered in
	// order — found, not found, a bad key's own error — and over the bound
	// 413.
	batch := []string{key, "never-written", ""}
	for i := range 20 {
		k := fmt.Sprintf("batch/%d", i)
		w, err := c.PutKVWithResponse(ctx, k, nil, client.KVWrite{Value: "b" + k})
		must(t, err)
		status("put a batch key", w.StatusCode(), http.StatusOK, w.Body)
		batch = append(batch, k)
	}
	bg, err := c.BatchGetKVWithResponse(ctx, nil, client.BatchKeys{Keys: batch})
	must(t, err)
	status("batch get", bg.StatusCode(), http.StatusOK, bg.Body)
	if bg.JSON200 == nil || len(bg.JSON200.Items) != len(batch) || bg.JSON200.RouteRevision == 0 {
		t.Fatalf("batch get %s", bg.Body)
	}
	routes, err := c.GetRoutesWithResponse(ctx)
	must(t, err)
	status("routes", routes.StatusCode(), http.StatusOK, routes.Body)
	groups := map[int64]bool{}
	for i, it := range bg.JSON200.Items {
		switch {
		case it.Key != batch[i]:
			t.Fatalf("item %d is %q, want %q", i, it.Key, batch[i])
		case i == 0:
			if !it.Found || it.Value == nil || *it.Value != "v2" || it.Revision == nil || *it.Revision != v2.JSON200.Revision {
				t.Fatalf("item %s: %+v", it.Key, it)
			}
		case i == 1:
			if it.Found || it.Error != nil || it.Value != nil {
				t.Fatalf("a key never written: %+v", it)
			}
		case i == 2:
			if it.Found || it.Error == nil || it.Error.Code != client.ErrorCode("invalid_argument") || it.Error.Retryable {
				t.Fatalf("an empty key: %+v", it)
			}
		default:
			if !it.Found || it.Value == nil || *it.Value != "b"+it.Key || it.Error != nil {
				t.Fatalf("item %s: %+v", it.Key, it)
			}
			groups[routes.JSON200.HashSlots[genHashSlot(it.Key)].Group] = true
		}
	}
	if len(groups) < 2 {
		t.Fatalf("the batch's keys fell in %d group(s): the test wants several", len(groups))
	}
	// A batch write on a real node: a slot's operations atomic (one
	// failing condition, none of its slot written), other slots applied;
	// retried with its Idempotency-Key, the same answer as a replay.
	var slotA []string
	for i := 0; len(slotA) < 2; i++ {
		if k := fmt.Sprintf("bw/%d", i); genHashSlot(k) == genHashSlot("bw/0") {
			slotA = append(slotA, k)
		}
	}
	elsewhere := "bw/elsewhere"
	for genHashSlot(elsewhere) == genHashSlot(slotA[0]) {
		elsewhere += "+"
	}
	putOp := func(k, v string) client.KVBatchOp {
		return client.KVBatchOp{Op: ptr("put"), Key: ptr(k), Value: ptr(v)}
	}
	ops := client.BatchKVWrite{Ops: []client.KVBatchOp{putOp(slotA[0], "1"), putOp(elsewhere, "2"), putOp(slotA[1], "3")}}
	idem := "contract-batch-write"
	wr, err := c.BatchWriteKVWithResponse(ctx, &client.BatchWriteKVParams{IdempotencyKey: &idem}, ops)
	must(t, err)
	status("batch write", wr.StatusCode(), http.StatusOK, wr.Body)
	items := wr.JSON200.Items
	if len(items) != 3 || !items[0].Ok || !items[1].Ok || !items[2].Ok || *items[0].Revision != *items[2].Revision {
		t.Fatalf("batch write %s", wr.Body)
	}
	again, err := c.BatchWriteKVWithResponse(ctx, &client.BatchWriteKVParams{IdempotencyKey: &idem}, ops)
	must(t, err)
	status("batch write again", again.StatusCode(), http.StatusOK, again.Body)
	if string(again.Body) != string(wr.Body) || again.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry answered %s (replayed %q), the first %s", again.Body, again.HTTPResponse.Header.Get("Idempotent-Replayed"), wr.Body)
	}
	failing := client.BatchKVWrite{Ops: []client.KVBatchOp{
		{Op: ptr("put"), Key: &slotA[0], Value: ptr("x"), IfAbsent: ptr(true)}, putOp(slotA[1], "y"),
		{Op: ptr("delete"), Key: &elsewhere, IfMatch: items[1].Revision}}}
	fr, err := c.BatchWriteKVWithResponse(ctx, nil, failing)
	must(t, err)
	status("failing batch write", fr.StatusCode(), http.StatusOK, fr.Body)
	fi := fr.JSON200.Items
	if fi[0].Ok || fi[0].Error.Code != client.ErrorCode("failed_precondition") || fi[1].Ok || fi[1].Error.Code != client.ErrorCode("aborted") ||
		!fi[2].Ok || fi[2].Existed == nil || !*fi[2].Existed {
		t.Fatalf("failing batch write %s", fr.Body)
	}
	check, err := c.BatchGetKVWithResponse(ctx, nil, client.BatchKeys{Keys: []string{slotA[0], slotA[1], elsewhere}})
	must(t, err)
	ci := check.JSON200.Items
	if *ci[0].Value != "1" || *ci[1].Value != "3" || ci[2].Found {
		t.Fatalf("after the failing batch: %s", check.Body)
	}

	tooMany := make([]string, 1001)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("k%d", i)
	}
	over, err := c.BatchGetKVWithResponse(ctx, nil, client.BatchKeys{Keys: tooMany})
	must(t, err)
	status("batch get over the bound", over.StatusCode(), http.StatusRequestEntityTooLarge, over.Body)

	// Listing by prefix: the 20 batch/ keys (not the bw/ keys of the batch
	// write), page after page in hash-slot order, each once; keys only
	// leaves the values out; a range [start, end) bounds them; an end
	// before the start is refused.
	listed := map[string]bool{}
	lp := &client.ListKVParams{Prefix: ptr("batch/"), Limit: ptr(client.Limit(6))}
	for pages := 0; ; pages++ {
		lr, err := c.ListKVWithResponse(ctx, lp)
		must(t, err)
		status("list kv", lr.StatusCode(), http.StatusOK, lr.Body)
		for _, it := range lr.JSON200.Items {
			if !strings.HasPrefix(it.Key, "batch/") || it.Value == nil || *it.Value != "b"+it.Key || it.Revision < 1 || listed[it.Key] {
				t.Fatalf("listed %+v (seen before: %v)", it, listed[it.Key])
			}
			listed[it.Key] = true
		}
		if lr.JSON200.NextCursor == nil || pages > 40 {
			break
		}
		lp.Cursor = lr.JSON200.NextCursor
	}
	if len(listed) != 20 {
		t.Fatalf("listed %d keys with prefix batch/: %v", len(listed), listed)
	}
	kr, err := c.ListKVWithResponse(ctx, &client.ListKVParams{Start: ptr("batch/10"), End: ptr("batch/12"), KeysOnly: ptr(true)})
	must(t, err)
	status("list a range, keys only", kr.StatusCode(), http.StatusOK, kr.Body)
	var ranged []string
	for _, it := range kr.JSON200.Items {
		if it.Value != nil {
			t.Fatalf("keys only listed a value: %+v", it)
		}
		ranged = append(ranged, it.Key)
	}
	slices.Sort(ranged)
	if !slices.Equal(ranged, []string{"batch/10", "batch/11"}) || kr.JSON200.NextCursor != nil {
		t.Fatalf("range [batch/10, batch/12): %v %s", ranged, kr.Body)
	}
	bad, err := c.ListKVWithResponse(ctx, &client.ListKVParams{Start: ptr("b"), End: ptr("a")})
	must(t, err)
	status("list with end before start", bad.StatusCode(), http.StatusBadRequest, bad.Body)

	delKV, err := c.DeleteKVWithResponse(ctx, key, &client.DeleteKVParams{IfMatch: v2.Headers200.ETag})
	must(t, err)
	status("delete kv", delKV.StatusCode(), http.StatusNoContent, delKV.Body)

	// Cluster and operations through the same client.
	sum, err := c.GetClusterWithResponse(ctx)
	must(t, err)
	status("cluster", sum.StatusCode(), http.StatusOK, sum.Body)
	if !sum.JSON200.Ready || sum.JSON200.Groups != 4 {
		t.Fatalf("cluster %+v", sum.JSON200)
	}
	ready, err := c.ReadyzWithResponse(ctx)
	must(t, err)
	status("readyz", ready.StatusCode(), http.StatusOK, ready.Body)
}
