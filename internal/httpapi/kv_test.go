package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

func decodeKV(t testing.TB, w *httptest.ResponseRecorder) kvJSON {
	t.Helper()
	var kv kvJSON
	dec := json.NewDecoder(strings.NewReader(w.Body.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kv); err != nil {
		t.Fatalf("kv body %q: %v", w.Body, err)
	}
	if want := etag(kv.Revision); w.Header().Get("ETag") != want {
		t.Fatalf("ETag %q, want %q", w.Header().Get("ETag"), want)
	}
	return kv
}

func TestKVConditionalWrites(t *testing.T) {
	f := newFake(t, 4)
	h := newHandler(t, f)
	status := func(w *httptest.ResponseRecorder, want int) {
		t.Helper()
		if w.Code != want {
			t.Fatalf("status %d, want %d: %s", w.Code, want, w.Body)
		}
		if want == 412 && decodeError(t, w).Code != slotstore.CodeFailedPrecondition {
			t.Fatalf("412 with %s", w.Body)
		}
	}

	status(do(t, h, "PUT", "/v1/kv/cfg", `{"value":"v1"}`, "If-Match", "*"), 412)
	w := do(t, h, "PUT", "/v1/kv/cfg", `{"value":"v1"}`, "If-None-Match", "*")
	status(w, 200)
	kv := decodeKV(t, w)
	if kv.Key != "cfg" || kv.Value != "v1" {
		t.Fatalf("put answered %+v", kv)
	}
	if c := f.proposed[len(f.proposed)-1].(*meta.PutKV).Cond; c.Kind != meta.CondIfAbsent {
		t.Fatalf("cond %+v", c)
	}
	rev := strconv.FormatUint(kv.Revision, 10)
	status(do(t, h, "PUT", "/v1/kv/cfg", `{"value":"v1"}`, "If-None-Match", "*"), 412)
	status(do(t, h, "PUT", "/v1/kv/cfg", `{"value":"v2"}`, "If-Match", `"`+rev+`0"`), 412)
	w = do(t, h, "PUT", "/v1/kv/cfg", `{"value":"v2"}`, "If-Match", `"`+rev+`"`)
	status(w, 200)
	if c := f.proposed[len(f.proposed)-1].(*meta.PutKV).Cond; c.Kind != meta.CondIfRevision || strconv.FormatUint(c.Revision, 10) != rev {
		t.Fatalf("cond %+v", c)
	}
	kv2 := decodeKV(t, w)
	status(do(t, h, "PUT", "/v1/kv/cfg", `{"value":"v3"}`, "If-Match", "*"), 200)

	w = do(t, h, "GET", "/v1/kv/cfg", "")
	status(w, 200)
	if got := decodeKV(t, w); got.Value != "v3" || got.Revision <= kv2.Revision {
		t.Fatalf("get %+v", got)
	}
	status(do(t, h, "DELETE", "/v1/kv/cfg", "", "If-Match", `"`+rev+`"`), 412)
	status(do(t, h, "DELETE", "/v1/kv/cfg", "", "If-Match", "*"), 204)
	status(do(t, h, "DELETE", "/v1/kv/cfg", ""), 404)
	status(do(t, h, "GET", "/v1/kv/cfg", ""), 404)
}

func TestKVKeyIsOneEscapedSegment(t *testing.T) {
	f := newFake(t, 4)
	h := newHandler(t, f)
	for path, key := range map[string]string{
		"/v1/kv/a%2Fb":        "a/b",
		"/v1/kv/tenant%2F%2F": "tenant//",
		"/v1/kv/100%25":       "100%",
		"/v1/kv/a%20b":        "a b",
		"/v1/kv/a+b":          "a+b",
		"/v1/kv/%41":          "A",
		"/v1/kv/%E4%BD%A0":    "你",
		"/v1/kv/.x":           ".x",
	} {
		w := do(t, h, "PUT", path, `{"value":"v"}`)
		if w.Code != 200 || decodeKV(t, w).Key != key {
			t.Fatalf("PUT %s: %d %s", path, w.Code, w.Body)
		}
		if _, ok := f.kvs[key]; !ok {
			t.Fatalf("PUT %s did not store %q", path, key)
		}
		w = do(t, h, "GET", path, "")
		if w.Code != 200 || decodeKV(t, w).Key != key {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		if got := w.Header().Get(hdrHashSlot); got != strconv.Itoa(int(slotstore.HashSlotOfString(key))) {
			t.Fatalf("GET %s: X-Hash-Slot %s", path, got)
		}
	}
	long := strings.Repeat("k", 512)
	if w := do(t, h, "PUT", "/v1/kv/"+long, `{"value":"`+strings.Repeat("v", 64<<10)+`"}`); w.Code != 200 {
		t.Fatalf("longest key and value: %d %s", w.Code, w.Body)
	}
}

func TestRouteHeaders(t *testing.T) {
	f := newFake(t, 4)
	h := newHandler(t, f)
	key := "route-me"
	hs := slotstore.HashSlotOfString(key)
	g := f.router.Load().Table().Group(hs)
	want := map[string]string{
		hdrHashSlot: strconv.Itoa(int(hs)), hdrSlotGroup: strconv.Itoa(int(g)), hdrLeaderNode: "1",
		hdrLeaderTerm: "7", hdrConfigEpoch: "3", hdrRouteRevision: "1",
	}
	check := func(w *httptest.ResponseRecorder, read bool) {
		t.Helper()
		for k, v := range want {
			if got := w.Header().Get(k); got != v {
				t.Fatalf("%s = %q, want %q (status %d)", k, got, v, w.Code)
			}
		}
		if read != (w.Header().Get(hdrServedBy) == "2" && w.Header().Get(hdrAppliedIndex) != "") {
			t.Fatalf("read=%v but headers %v", read, w.Header())
		}
	}
	check(do(t, h, "GET", "/v1/kv/"+key, ""), true) // 404 still carries the route
	check(do(t, h, "PUT", "/v1/kv/"+key, `{"value":"v"}`), false)
	check(do(t, h, "PUT", "/v1/kv/"+key, `{"value":"v"}`, "If-None-Match", "*"), false) // 412
	check(do(t, h, "GET", "/v1/kv/"+key, ""), true)
	check(do(t, h, "DELETE", "/v1/kv/"+key, ""), false)

	// No live leader: the leader headers are left out, never guessed.
	f.router.SetLeader(g, 0, 8)
	w := do(t, h, "PUT", "/v1/kv/"+key, `{"value":"v"}`)
	if w.Code != 503 || decodeError(t, w).Code != slotstore.CodeRouteNotReady || w.Header().Get("Retry-After") == "" {
		t.Fatalf("no leader: %d %s", w.Code, w.Body)
	}
	if w.Header().Get(hdrLeaderNode) != "" || w.Header().Get(hdrLeaderTerm) != "" || w.Header().Get(hdrSlotGroup) != want[hdrSlotGroup] {
		t.Fatalf("no leader headers %v", w.Header())
	}
}

func TestRouteRevisionFence(t *testing.T) {
	f := newFake(t, 4)
	tbl := f.router.Load().Table()
	next, err := routing.NewTable(5, tbl.Groups())
	if err != nil {
		t.Fatal(err)
	}
	f.router.SetTable(next)
	h := newHandler(t, f)

	for _, req := range [][3]string{
		{"PUT", "/v1/kv/k", `{"value":"v"}`}, {"DELETE", "/v1/kv/k", ""}, {"GET", "/v1/kv/k", ""},
		{"POST", "/v1/users", `{"uid":"u"}`}, {"PUT", "/v1/users/u", `{}`}, {"GET", "/v1/users/u", ""}, {"DELETE", "/v1/users/u", ""},
	} {
		w := do(t, h, req[0], req[1], req[2], hdrRouteRevision, "4")
		if w.Code != 409 {
			t.Fatalf("%s %s: %d %s", req[0], req[1], w.Code, w.Body)
		}
		if e := decodeError(t, w); e.Code != slotstore.CodeRouteRevisionMismatch || e.RouteRevision != 5 {
			t.Fatalf("%s %s: %+v", req[0], req[1], e)
		}
		if w.Header().Get(hdrRouteRevision) != "5" || w.Header().Get(hdrHashSlot) == "" {
			t.Fatalf("%s %s: headers %v", req[0], req[1], w.Header())
		}
	}
	if n := f.count("Propose") + f.count("Read"); n != 0 {
		t.Fatalf("fenced requests reached the backend %d times", n)
	}
	for _, rev := range []string{"5", "6"} {
		if w := do(t, h, "PUT", "/v1/kv/k", `{"value":"v"}`, hdrRouteRevision, rev); w.Code != 200 {
			t.Fatalf("revision %s: %d %s", rev, w.Code, w.Body)
		}
	}
}

// TestOverTheWire runs a few requests through a real server and client:
// what net/http does to escaped paths and oversize bodies.
func TestOverTheWire(t *testing.T) {
	f := newFake(t, 4)
	srv := httptest.NewServer(newHandler(t, f, func(c *Config) { c.MaxBodyBytes = 1 << 10 }))
	defer srv.Close()

	req, _ := http.NewRequest("PUT", srv.URL+"/v1/kv/tenant%2F7%2Fcfg", strings.NewReader(`{"value":"v"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, ok := f.kvs["tenant/7/cfg"]; resp.StatusCode != 200 || !ok {
		t.Fatalf("escaped key over the wire: %d, stored %v", resp.StatusCode, f.kvs)
	}

	req, _ = http.NewRequest("PUT", srv.URL+"/v1/kv/big", strings.NewReader(`{"value":"`+strings.Repeat("v", 1<<20)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body errorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 413 || body.Error.Code != slotstore.CodePayloadTooLarge {
		t.Fatalf("oversize body: %d %+v %v", resp.StatusCode, body, err)
	}
	if !resp.Close {
		t.Errorf("the server keeps a connection whose oversize body it did not read")
	}
}
