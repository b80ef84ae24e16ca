// Package e2e drives the HTTP API of real in-process nodes (real Raft, real
// Pebble, real HTTP) end to end.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta"
	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// server is one node behind the real HTTP API.
type server struct {
	t    *testing.T
	node *cluster.Node
	url  string
}

func serve(t *testing.T, n *cluster.Node) *server {
	t.Helper()
	ts := slotstoretest.ServeAPI(t, n, func(cfg *httpapi.Config) { cfg.OpenAPI = slotmeta.OpenAPI })
	return &server{t: t, node: n, url: ts.URL}
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func (r response) json(v any) {
	if err := json.Unmarshal(r.body, v); err != nil {
		panic(fmt.Sprintf("decode %s: %v", r.body, err))
	}
}

func (r response) errCode() string {
	var e client.ErrorBody
	_ = json.Unmarshal(r.body, &e)
	return string(e.Error.Code)
}

// do sends a request; body "" sends none. headers are name, value pairs.
func (s *server) do(method, path, body string, headers ...string) response {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, header: resp.Header, body: b}
}

func (s *server) must(want int, method, path, body string, headers ...string) response {
	s.t.Helper()
	r := s.do(method, path, body, headers...)
	if r.code != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, r.code, r.body, want)
	}
	return r
}

// oneNode is a one-node cluster whose membership projector is off: tests
// here count the commands a request proposes, and the projector proposes in
// the background. Projection tests use oneProjectingNode.
func oneNode(t *testing.T) *server {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 4,
		Tune: func(cfg *cluster.Config) { cfg.ProjectInterval = -1 }})
	return serve(t, c.Nodes[0])
}

// oneProjectingNode is a one-node cluster with the projector running.
func oneProjectingNode(t *testing.T) *server {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 4,
		Tune: func(cfg *cluster.Config) { cfg.ProjectInterval = 20 * time.Millisecond }})
	return serve(t, c.Nodes[0])
}

func TestUsersCRUDAndListAcrossSlots(t *testing.T) {
	s := oneNode(t)
	r := s.must(201, "POST", "/v1/users", `{"uid":"ada","name":"Ada","extra":{"lang":"en"}}`)
	var u client.User
	r.json(&u)
	if u.Uid != "ada" || u.Name != "Ada" || r.member("extra") != `{"lang":"en"}` || u.CreatedAtMs == 0 || u.Revision == 0 {
		t.Fatalf("created user %s", js(u))
	}
	if r := s.do("POST", "/v1/users", `{"uid":"ada"}`); r.code != 409 || r.errCode() != "conflict" {
		t.Fatalf("second create: %d %s", r.code, r.body)
	}
	r = s.must(200, "PUT", "/v1/users/ada", `{"name":"Ada L."}`)
	var u2 client.User
	r.json(&u2)
	if u2.Name != "Ada L." || u2.CreatedAtMs != u.CreatedAtMs || u2.Revision <= u.Revision {
		t.Fatalf("upsert kept creation time and bumped revision? %s vs %s", js(u2), js(u))
	}
	for _, h := range []string{"X-Hash-Slot", "X-Slot-Group", "X-Leader-Node", "X-Leader-Term", "X-Config-Epoch", "X-Route-Revision"} {
		if r.header.Get(h) == "" {
			t.Fatalf("keyed response lacks %s: %v", h, r.header)
		}
	}
	s.must(204, "DELETE", "/v1/users/ada", "")
	s.must(404, "GET", "/v1/users/ada", "")
	s.must(404, "DELETE", "/v1/users/ada", "")

	// Many users over many hash slots and all 4 groups, walked in pages.
	want := map[string]bool{}
	for i := 0; i < 120; i++ {
		uid := fmt.Sprintf("user-%03d", i)
		s.must(201, "POST", "/v1/users", fmt.Sprintf(`{"uid":%q}`, uid))
		want[uid] = true
	}
	for _, limit := range []int{1, 7, 1000} {
		seen := map[string]bool{}
		lastSlot := -1
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 200 {
				t.Fatal("paging does not end")
			}
			r := s.must(200, "GET", fmt.Sprintf("/v1/users?limit=%d&cursor=%s", limit, cursor), "")
			var page client.UserPage
			r.json(&page)
			if len(page.Items) > limit {
				t.Fatalf("page of %d over limit %d", len(page.Items), limit)
			}
			for _, it := range page.Items {
				if seen[it.Uid] {
					t.Fatalf("limit %d: %s listed twice", limit, it.Uid)
				}
				seen[it.Uid] = true
				slot := int(hashSlot(it.Uid))
				if slot < lastSlot {
					t.Fatalf("limit %d: %s (slot %d) after slot %d", limit, it.Uid, slot, lastSlot)
				}
				lastSlot = slot
			}
			if deref(page.NextCursor) == "" {
				break
			}
			cursor = *page.NextCursor
		}
		if len(seen) != len(want) {
			t.Fatalf("limit %d: listed %d users, want %d", limit, len(seen), len(want))
		}
	}
}

func TestKVCompareAndSet(t *testing.T) {
	s := oneNode(t)
	r := s.must(200, "PUT", "/v1/kv/cfg%2Fflags", `{"value":"on"}`, "If-None-Match", "*")
	etag := r.header.Get("ETag")
	var kv client.KV
	r.json(&kv)
	if kv.Key != "cfg/flags" || kv.Value != "on" || etag != fmt.Sprintf("%q", fmt.Sprint(kv.Revision)) {
		t.Fatalf("put: %+v etag %s", kv, etag)
	}
	if r := s.do("PUT", "/v1/kv/cfg%2Fflags", `{"value":"x"}`, "If-None-Match", "*"); r.code != 412 {
		t.Fatalf("create-only on an existing key: %d %s", r.code, r.body)
	}
	if r := s.do("PUT", "/v1/kv/cfg%2Fflags", `{"value":"x"}`, "If-Match", `"999"`); r.code != 412 || r.errCode() != "failed_precondition" {
		t.Fatalf("stale CAS: %d %s", r.code, r.body)
	}
	r = s.must(200, "PUT", "/v1/kv/cfg%2Fflags", `{"value":"off"}`, "If-Match", etag)
	newTag := r.header.Get("ETag")
	if newTag == etag {
		t.Fatal("CAS did not move the revision")
	}
	r = s.must(200, "GET", "/v1/kv/cfg%2Fflags", "")
	r.json(&kv)
	if kv.Value != "off" || r.header.Get("ETag") != newTag || r.header.Get("X-Applied-Index") == "" || r.header.Get("X-Served-By") != "1" {
		t.Fatalf("get after CAS: %+v %v", kv, r.header)
	}
	s.must(200, "GET", "/v1/kv/cfg%2Fflags?consistency=local", "")
	if r := s.do("DELETE", "/v1/kv/cfg%2Fflags", "", "If-Match", etag); r.code != 412 {
		t.Fatalf("delete with a stale If-Match: %d", r.code)
	}
	s.must(204, "DELETE", "/v1/kv/cfg%2Fflags", "", "If-Match", newTag)
	s.must(404, "GET", "/v1/kv/cfg%2Fflags", "")
}

func TestIdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	s := oneNode(t)
	first := s.must(201, "POST", "/v1/users", `{"uid":"idem","name":"one"}`, "Idempotency-Key", "req-1")
	c0 := s.node.Stats().Commands
	again := s.must(201, "POST", "/v1/users", `{"uid":"idem","name":"one"}`, "Idempotency-Key", "req-1")
	if !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay differs:\n%s\n%s\n%v", first.body, again.body, again.header)
	}
	if r := s.do("POST", "/v1/users", `{"uid":"idem","name":"two"}`, "Idempotency-Key", "req-1"); r.code != 409 {
		t.Fatalf("same key, other body: %d %s", r.code, r.body)
	}
	// Without the key the same request is a real second create.
	if r := s.do("POST", "/v1/users", `{"uid":"idem","name":"one"}`); r.code != 409 {
		t.Fatalf("second create without a key: %d", r.code)
	}
	c1 := s.node.Stats().Commands
	if c1-c0 != 3 {
		t.Fatalf("%d commands proposed, want 3 (replays are answered by the FSM record)", c1-c0)
	}
	var u client.User
	s.must(200, "GET", "/v1/users/idem", "").json(&u)
	var f client.User
	first.json(&f)
	if u.Revision != f.Revision {
		t.Fatalf("the replay wrote again: revision %d, first %d", u.Revision, f.Revision)
	}
}

func TestBadInputIsRejectedWithoutProposing(t *testing.T) {
	s := oneNode(t)
	big := strings.Repeat("x", 2<<20)
	cases := []struct {
		method, path, body string
		headers            []string
		want               int
	}{
		{"POST", "/v1/users", `{"uid":`, nil, 400},
		{"POST", "/v1/users", `{"uid":"a","bogus":1}`, nil, 400},
		{"POST", "/v1/users", `{"uid":42}`, nil, 400},
		{"POST", "/v1/users", `{"uid":""}`, nil, 400},
		{"POST", "/v1/users", `{"uid":"has space"}`, nil, 400},
		{"POST", "/v1/users", `{"uid":"` + strings.Repeat("u", 600) + `"}`, nil, 400},
		{"POST", "/v1/users", `[]`, nil, 400},
		{"POST", "/v1/users", `{"uid":"a"} {"uid":"b"}`, nil, 400},
		{"POST", "/v1/users", `{"uid":"a","name":"` + big + `"}`, nil, 413},
		{"PUT", "/v1/kv/k", `{"value":5}`, nil, 400},
		{"PUT", "/v1/kv/k", `{"value":"` + strings.Repeat("v", 70<<10) + `"}`, nil, 400},
		{"PUT", "/v1/kv/" + strings.Repeat("k", 600), `{"value":"v"}`, nil, 400},
		{"PUT", "/v1/kv/k", `{"value":"v"}`, []string{"If-Match", "nope"}, 400},
		{"PUT", "/v1/kv/k", `{"value":"v"}`, []string{"X-Route-Revision", "abc"}, 400},
		{"PUT", "/v1/kv/k", `{"value":"v"}`, []string{"X-Route-Revision", "0"}, 409},
		{"PUT", "/v1/kv/k", `{"value":"v"}`, []string{"Idempotency-Key", strings.Repeat("i", 300)}, 400},
		{"GET", "/v1/kv/k?consistency=maybe", "", nil, 400},
		{"GET", "/v1/users?limit=0", "", nil, 400},
		{"GET", "/v1/users?limit=1001", "", nil, 400},
		{"GET", "/v1/users?cursor=%%%", "", nil, 400},
		{"GET", "/v1/users?cursor=AAAA", "", nil, 400},
		{"POST", "/v1/cluster/routes/resolve", `{"keys":[]}`, nil, 400},
	}
	c0 := s.node.Stats().Commands
	for _, tc := range cases {
		r := s.do(tc.method, tc.path, tc.body, tc.headers...)
		if r.code != tc.want || r.errCode() == "" {
			t.Errorf("%s %s %.60s: %d %.200s, want %d with the error JSON", tc.method, tc.path, tc.body, r.code, r.body, tc.want)
		}
		if r.code >= 500 {
			t.Errorf("a client mistake got %d", r.code)
		}
	}
	if r := s.do("PUT", "/v1/kv/k", `{"value":"v"}`, "X-Route-Revision", "0"); r.header.Get("X-Route-Revision") == "" || !strings.Contains(string(r.body), `"route_revision":1`) {
		t.Errorf("route_revision_mismatch must carry the current revision: %v %s", r.header, r.body)
	}
	if c1 := s.node.Stats().Commands; c1 != c0 {
		t.Fatalf("rejected requests proposed %d commands", c1-c0)
	}
	s.must(404, "GET", "/v1/kv/k", "")
}

func TestOperationalEndpoints(t *testing.T) {
	s := oneNode(t)
	s.must(200, "GET", "/healthz", "")
	s.must(200, "GET", "/readyz", "")
	s.must(200, "PUT", "/v1/kv/m", `{"value":"v"}`)
	var routes client.Routes
	s.must(200, "GET", "/v1/cluster/routes", "").json(&routes)
	if routes.Revision != 1 || len(routes.HashSlots) != 256 {
		t.Fatalf("routes: revision %d, %d slots", routes.Revision, len(routes.HashSlots))
	}
	for i, hs := range routes.HashSlots {
		if hs.HashSlot != i || hs.Group < 1 || hs.Group > 4 || deref(hs.LeaderNode) != 1 {
			t.Fatalf("slot %d: %s", i, js(hs))
		}
	}
	r := s.must(200, "GET", "/v1/kv/m", "")
	var resolved client.ResolvedRoutes
	s.must(200, "POST", "/v1/cluster/routes/resolve", `{"keys":["m"]}`).json(&resolved)
	if fmt.Sprint(resolved.Routes[0].HashSlot) != r.header.Get("X-Hash-Slot") || fmt.Sprint(resolved.Routes[0].Group) != r.header.Get("X-Slot-Group") {
		t.Fatalf("resolve %s disagrees with the route headers %v", js(resolved), r.header)
	}
	metrics := string(s.must(200, "GET", "/metrics", "").body)
	_ = metrics // the API's own metrics live in its registry
	if !strings.Contains(metrics, "slotmeta_http_request_duration_seconds") {
		t.Fatalf("metrics lack request latency:\n%.500s", metrics)
	}
	if !strings.HasPrefix(string(s.must(200, "GET", "/openapi.yaml", "").body), "openapi: 3") {
		t.Fatal("/openapi.yaml is not the contract")
	}
}

// eventually sends a request until it answers want, retrying only answers a
// client is told to retry (503 and 429 with a retryable error), for at most
// 10 s. Multi-node tests use it: elections under a loaded machine are normal
// and the API's contract for them is "retry after Retry-After".
func (s *server) eventually(want int, method, path, body string, headers ...string) response {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := s.do(method, path, body, headers...)
		if r.code == want {
			return r
		}
		retryable := (r.code == 503 || r.code == 429) && strings.Contains(string(r.body), `"retryable":true`)
		if !retryable || time.Now().After(deadline) {
			s.t.Fatalf("%s %s: %d %s, want %d", method, path, r.code, r.body, want)
		}
		time.Sleep(50 * time.Millisecond) // the Retry-After of a client, shortened for tests
	}
}
