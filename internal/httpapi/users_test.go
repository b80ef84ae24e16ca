package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func decodeUser(t testing.TB, w *httptest.ResponseRecorder) map[string]json.RawMessage {
	t.Helper()
	var u map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &u); err != nil {
		t.Fatalf("user body %q: %v", w.Body, err)
	}
	for _, f := range []string{"uid", "name", "avatar", "extra", "created_at_ms", "updated_at_ms", "revision"} {
		if _, ok := u[f]; !ok {
			t.Fatalf("user body lacks %q: %s", f, w.Body)
		}
	}
	if len(u) != 7 {
		t.Fatalf("user body has extra fields: %s", w.Body)
	}
	return u
}

func TestUserLifecycle(t *testing.T) {
	f := newFake(t, 4)
	h := newHandler(t, f)

	w := do(t, h, "POST", "/v1/users", `{"uid":"alice","name":"Alice","avatar":"https://a/1.png","extra":{"vip": true, "tags":["a","b"]}}`)
	if w.Code != 201 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if loc := w.Header().Get("Location"); loc != "/v1/users/alice" {
		t.Fatalf("Location %q", loc)
	}
	u := decodeUser(t, w)
	if string(u["extra"]) != `{"vip":true,"tags":["a","b"]}` || string(u["name"]) != `"Alice"` {
		t.Fatalf("create answered %s", w.Body)
	}
	if got := f.users["alice"].Extra; got != `{"vip": true, "tags":["a","b"]}` {
		t.Fatalf("extra not stored verbatim: %q", got)
	}
	created := string(u["created_at_ms"])

	if w := do(t, h, "POST", "/v1/users", `{"uid":"alice"}`); w.Code != 409 || decodeError(t, w).Code != slotstore.CodeConflict {
		t.Fatalf("second create: %d %s", w.Code, w.Body)
	}

	f.now += 5000
	w = do(t, h, "PUT", "/v1/users/alice", `{"name":"Alice B"}`)
	if w.Code != 200 {
		t.Fatalf("put: %d %s", w.Code, w.Body)
	}
	u = decodeUser(t, w)
	if string(u["created_at_ms"]) != created || string(u["updated_at_ms"]) == created || string(u["extra"]) != "null" {
		t.Fatalf("put answered %s", w.Body)
	}

	w = do(t, h, "GET", "/v1/users/alice?consistency=local", "")
	if w.Code != 200 || string(decodeUser(t, w)["name"]) != `"Alice B"` {
		t.Fatalf("get: %d %s", w.Code, w.Body)
	}
	if w.Header().Get(hdrServedBy) != "2" || w.Header().Get(hdrAppliedIndex) == "" {
		t.Fatalf("read headers %v", w.Header())
	}

	// PUT creates, with the uid from the path or a matching one in the body.
	if w := do(t, h, "PUT", "/v1/users/bob", `{"uid":"bob","extra":"plain"}`); w.Code != 200 || string(decodeUser(t, w)["extra"]) != `"plain"` {
		t.Fatalf("put new: %d %s", w.Code, w.Body)
	}

	if w := do(t, h, "DELETE", "/v1/users/alice", ""); w.Code != 204 || w.Body.Len() != 0 {
		t.Fatalf("delete: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/v1/users/alice", ""); w.Code != 404 || decodeError(t, w).Code != slotstore.CodeNotFound {
		t.Fatalf("get deleted: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "DELETE", "/v1/users/alice", ""); w.Code != 404 {
		t.Fatalf("delete again: %d %s", w.Code, w.Body)
	}
}

func TestUserWithUnicodeAndEscapedUID(t *testing.T) {
	f := newFake(t, 4)
	h := newHandler(t, f)
	if w := do(t, h, "PUT", "/v1/users/%E7%94%A8%E6%88%B7%25", `{"name":"n"}`); w.Code != 200 {
		t.Fatalf("put: %d %s", w.Code, w.Body)
	}
	if _, ok := f.users["用户%"]; !ok {
		t.Fatalf("stored users %v", f.users)
	}
	if w := do(t, h, "POST", "/v1/users", `{"uid":"a:b@c"}`); w.Code != 201 || w.Header().Get("Location") != "/v1/users/a:b@c" {
		t.Fatalf("create: %d %v", w.Code, w.Header())
	}
}

func TestUserExtraNotWrittenThroughTheAPI(t *testing.T) {
	f := newFake(t, 2)
	f.users["x"] = &meta.User{UID: "x", Extra: "not json"}
	w := do(t, newHandler(t, f), "GET", "/v1/users/x", "")
	if w.Code != 200 || string(decodeUser(t, w)["extra"]) != `"not json"` {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

func TestIdempotentReplay(t *testing.T) {
	f := newFake(t, 4)
	h := newHandler(t, f)
	first := do(t, h, "POST", "/v1/users", `{"uid":"carol"}`, "Idempotency-Key", "req-1")
	again := do(t, h, "POST", "/v1/users", `{"uid":"carol"}`, "Idempotency-Key", "req-1")
	if first.Code != 201 || again.Code != 201 || first.Body.String() != again.Body.String() {
		t.Fatalf("first %d %s, again %d %s", first.Code, first.Body, again.Code, again.Body)
	}
	if first.Header().Get(hdrReplayed) != "" || again.Header().Get(hdrReplayed) != "true" {
		t.Fatalf("Idempotent-Replayed: first %q, again %q", first.Header().Get(hdrReplayed), again.Header().Get(hdrReplayed))
	}
	for _, c := range f.proposed {
		if c.Head().IdempotencyKey != "req-1" {
			t.Fatalf("proposed without the key: %+v", c.Head())
		}
	}
	// A replayed failure is marked too; without a key there is no replay.
	do(t, h, "DELETE", "/v1/kv/nope", "", "Idempotency-Key", "req-2")
	w := do(t, h, "DELETE", "/v1/kv/nope", "", "Idempotency-Key", "req-2")
	if w.Code != 404 || w.Header().Get(hdrReplayed) != "true" {
		t.Fatalf("replayed failure %d %v", w.Code, w.Header())
	}
	if w := do(t, h, "POST", "/v1/users", `{"uid":"carol"}`); w.Code != 409 || w.Header().Get(hdrReplayed) != "" {
		t.Fatalf("unkeyed retry %d %v", w.Code, w.Header())
	}
}
