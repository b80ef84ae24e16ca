package contract

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestContractWalk walks the API on a real node: users, kv, cluster,
// operations, and the error answers (400, 404, 409, 412, 413, 503). The
// client's transport checks every exchange against the spec; a request the
// walk marks refused must be refused by the spec as well as the server.
func TestContractWalk(t *testing.T) {
	n := startNode(t)

	// Operations.
	n.do(200, req{method: "GET", path: "/healthz"})
	n.do(200, req{method: "GET", path: "/readyz"})
	n.do(200, req{method: "GET", path: "/metrics"})
	n.do(200, req{method: "GET", path: "/openapi.yaml"})
	if r := n.do(200, req{method: "GET", path: "/docs"}); !strings.Contains(string(r.body), "swagger-ui-bundle.js") {
		t.Fatalf("/docs does not load Swagger UI: %.300s", r.body)
	}

	// Cluster.
	n.do(200, req{method: "GET", path: "/v1/cluster"})
	var nodes struct {
		Items []struct {
			ID       uint64 `json:"id"`
			RaftAddr string `json:"raft_addr"`
		} `json:"items"`
	}
	n.do(200, req{method: "GET", path: "/v1/cluster/nodes"}).decode(t, &nodes)
	if len(nodes.Items) != 1 {
		t.Fatalf("nodes: %+v", nodes)
	}
	self := nodes.Items[0]
	n.do(200, req{method: "POST", path: "/v1/cluster/nodes", body: fmt.Sprintf(`{"id":%d,"raft_addr":%q}`, self.ID, self.RaftAddr)})
	if r := n.do(409, req{method: "POST", path: "/v1/cluster/nodes", body: fmt.Sprintf(`{"id":%d,"raft_addr":"127.0.0.1:1"}`, self.ID)}); r.errCode() != "conflict" {
		t.Fatalf("re-registering a node elsewhere: %s", r.body)
	}
	n.do(400, req{method: "POST", path: "/v1/cluster/nodes", body: `{"raft_addr":"127.0.0.1:1"}`, refused: true})
	n.do(200, req{method: "GET", path: "/v1/cluster/routes"})
	n.do(200, req{method: "POST", path: "/v1/cluster/routes/resolve", body: `{"keys":["ada","app/conf"]}`})
	n.do(400, req{method: "POST", path: "/v1/cluster/routes/resolve", body: `{"keys":[]}`, refused: true})

	// Users.
	created := n.do(201, req{method: "POST", path: "/v1/users", body: `{"uid":"ada","name":"Ada","extra":{"lang":"en"}}`,
		headers: []string{"Idempotency-Key", "create-ada"}})
	if r := n.do(201, req{method: "POST", path: "/v1/users", body: `{"uid":"ada","name":"Ada","extra":{"lang":"en"}}`,
		headers: []string{"Idempotency-Key", "create-ada"}}); r.header.Get("Idempotent-Replayed") != "true" || string(r.body) != string(created.body) {
		t.Fatalf("replayed create: %v %s", r.header, r.body)
	}
	if r := n.do(409, req{method: "POST", path: "/v1/users", body: `{"uid":"ada"}`}); r.errCode() != "conflict" {
		t.Fatalf("second create: %s", r.body)
	}
	n.do(200, req{method: "GET", path: "/v1/users/ada"})
	n.do(200, req{method: "GET", path: "/v1/users/ada?consistency=local"})
	n.do(200, req{method: "HEAD", path: "/v1/users/ada"})
	n.do(200, req{method: "PUT", path: "/v1/users/ada", body: `{"name":"Ada L.","avatar":"https://example.org/ada.png"}`})
	n.do(200, req{method: "PUT", path: "/v1/users/grace", body: `{"uid":"grace","extra":[1,2]}`})
	n.do(201, req{method: "POST", path: "/v1/users", body: `{"uid":"alan","extra":null}`})
	if r := n.do(409, req{method: "GET", path: "/v1/users/ada", headers: []string{"X-Route-Revision", "0"}}); r.errCode() != "route_revision_mismatch" {
		t.Fatalf("stale route revision: %s", r.body)
	}
	n.do(400, req{method: "PUT", path: "/v1/users/ada", body: `{"uid":"bob"}`})                      // the spec cannot say "equal to the path's"
	n.do(400, req{method: "GET", path: "/v1/users/a%20b", refused: true})                            // whitespace: the pattern refuses it
	n.do(400, req{method: "POST", path: "/v1/users", body: `{"uid":"x","nick":"y"}`, refused: true}) // unknown member
	n.do(400, req{method: "POST", path: "/v1/users", body: `{"name":"no uid"}`, refused: true})
	n.do(400, req{method: "POST", path: "/v1/users", body: `{"uid":"x"}`, headers: []string{"Idempotency-Key", "caf\u00e9"}, refused: true})
	n.do(400, req{method: "GET", path: "/v1/users?limit=0", refused: true})
	n.do(400, req{method: "GET", path: "/v1/users?consistency=eventual", refused: true})
	n.do(413, req{method: "POST", path: "/v1/users", body: `{"uid":"big","name":"` + strings.Repeat("x", 1<<20) + `"}`, refused: true})
	seen := map[string]bool{}
	for cursor, pages := "", 0; ; pages++ {
		if pages > 10 {
			t.Fatal("listing does not end")
		}
		var page struct {
			Items []struct {
				UID string `json:"uid"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		n.do(200, req{method: "GET", path: "/v1/users?limit=2&cursor=" + url.QueryEscape(cursor)}).decode(t, &page)
		for _, u := range page.Items {
			seen[u.UID] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if !seen["ada"] || !seen["grace"] || !seen["alan"] {
		t.Fatalf("listing saw %v", seen)
	}
	n.do(204, req{method: "DELETE", path: "/v1/users/ada", headers: []string{"Idempotency-Key", "delete-ada"}})
	n.do(404, req{method: "GET", path: "/v1/users/ada"})
	n.do(404, req{method: "DELETE", path: "/v1/users/ada"})

	// Business keys; a '/' inside a key travels as %2F.
	const kv = "/v1/kv/app%2Fconf"
	r := n.do(200, req{method: "PUT", path: kv, body: `{"value":"v1"}`, headers: []string{"If-None-Match", "*"}})
	first := r.header.Get("ETag")
	if r := n.do(412, req{method: "PUT", path: kv, body: `{"value":"v1"}`, headers: []string{"If-None-Match", "*"}}); r.errCode() != "failed_precondition" {
		t.Fatalf("create-only over an existing key: %s", r.body)
	}
	second := n.do(200, req{method: "PUT", path: kv, body: `{"value":"v2"}`, headers: []string{"If-Match", first}}).header.Get("ETag")
	n.do(412, req{method: "PUT", path: kv, body: `{"value":"v3"}`, headers: []string{"If-Match", first}})
	n.do(200, req{method: "PUT", path: kv, body: `{"value":"v3"}`, headers: []string{"If-Match", "*", "Idempotency-Key", "kv-v3"}})
	n.do(200, req{method: "GET", path: kv})
	n.do(200, req{method: "GET", path: kv + "?consistency=local"})
	n.do(400, req{method: "PUT", path: kv, body: `{"value":"v"}`, headers: []string{"If-Match", "W/\"1\""}, refused: true})
	n.do(400, req{method: "PUT", path: kv, body: `{"value":""}`, refused: true})
	n.do(400, req{method: "PUT", path: kv, body: bigBody(70000), refused: true})
	n.do(413, req{method: "PUT", path: kv, body: bigBody(1<<20 + 1), refused: true})
	n.do(400, req{method: "PUT", path: kv, body: `{"value":"v","value":"w"}`}) // duplicate member: JSON Schema cannot see it
	n.do(412, req{method: "DELETE", path: kv, headers: []string{"If-Match", second}})
	n.do(204, req{method: "DELETE", path: kv})
	n.do(404, req{method: "GET", path: kv})
	n.do(404, req{method: "DELETE", path: kv})

	// 503: a node that is not ready, and writes whose deadline has passed
	// before the node could answer. (Linearizable reads under such a
	// deadline answer 500 "raft error" for now: dragonboat's
	// ErrTimeoutTooSmall is not mapped to timeout.)
	_, unreadyURL := n.serve(apiConfig(unready{n.backend}))
	if r := n.do(503, req{base: unreadyURL, method: "GET", path: "/readyz"}); r.errCode() != "route_not_ready" {
		t.Fatalf("readyz of an unready node: %s", r.body)
	}
	expired := apiConfig(n.backend)
	expired.RequestTimeout = time.Nanosecond
	_, expiredURL := n.serve(expired)
	n.do(503, req{base: expiredURL, method: "POST", path: "/v1/users", body: `{"uid":"late"}`})
	n.do(503, req{base: expiredURL, method: "PUT", path: kv, body: `{"value":"late"}`})

	// The walk covers what it claims to.
	statuses := map[int]bool{}
	for _, e := range n.tr.seen() {
		statuses[e.Status] = true
	}
	for _, s := range []int{200, 201, 204, 400, 404, 409, 412, 413, 503} {
		if !statuses[s] {
			t.Errorf("the walk saw no %d", s)
		}
	}
	if missed := unexercised(n.spec, n.tr.seen()); len(missed) > 0 {
		t.Logf("operations the walk does not exercise (TestContractProbeGets may): %v", missed)
	}
}

// unexercised lists the spec's operations that no exchange reached.
func unexercised(s *spec, seen []exchange) []string {
	hit := map[string]bool{}
	for _, e := range seen {
		r, err := http.NewRequest(e.Method, e.URL.String(), nil)
		if err != nil {
			continue
		}
		if route, _, err := s.router.FindRoute(r); err == nil {
			hit[route.Method+" "+route.Path] = true
		}
	}
	var missed []string
	for _, op := range s.operations() {
		if !hit[op] {
			missed = append(missed, op)
		}
	}
	return slices.Clip(missed)
}
