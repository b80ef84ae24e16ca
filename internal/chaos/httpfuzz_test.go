package chaos

import (
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// Pieces random requests are made of: real paths and near misses, every
// method, bodies that are valid, malformed, oversized or of the wrong shape,
// and headers the API reads.
var (
	fuzzPaths = []string{
		"/v1/users", "/v1/users/u1", "/v1/users/u%2F1", "/v1/users/%00", "/v1/users/" + strings.Repeat("u", 600),
		"/v1/users/u1/devices", "/v1/users/u1/devices/7", "/v1/users/u1/devices/300", "/v1/users/u1/plugins/p1",
		"/v1/users/u1/memberships", "/v1/users/u1/memberships/1/c1", "/v1/users/u1/memberships/1/c1/read",
		"/v1/users/u1/cmd-bindings/1/c1", "/v1/users/u1/cmd-bindings/1/c1/ack", "/v1/system-uids", "/v1/system-uids/s1",
		"/v1/plugins/p1/users", "/v1/channels", "/v1/channels/1/c1", "/v1/channels/0/c1", "/v1/channels/1/c1/subscribers",
		"/v1/channels/1/c1/subscribers/remove", "/v1/channels/1/c1/subscribers/u1", "/v1/channels/1/c1/denylist",
		"/v1/channels/1/c1/runtime", "/v1/channels/1/c1/runtime/retention", "/v1/channels/1/c1/migrations",
		"/v1/channels/1/c1/migrations/1/advance", "/v1/channels/1/c1/events", "/v1/kv/k", "/v1/kv/", "/v1/kv/%zz",
		"/v1/cluster", "/v1/cluster/nodes", "/v1/cluster/routes", "/v1/cluster/routes/resolve", "/v1/cluster/groups",
		"/v1/cluster/groups/1", "/v1/cluster/groups/99", "/v1/cluster/groups/1/leader-transfer/preflight?target_node=x",
		"/v1/cluster/tasks", "/v1/cluster/tasks/5/cancel", "/v1/cluster/decisions", "/v1/cluster/hash-slots/7/migrations",
		"/healthz", "/readyz", "/nope", "/v1/users?limit=-1", "/v1/users?cursor=@@", "/v1/kv/k?consistency=weird",
	}
	fuzzMethods = []string{"GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS"}
	fuzzBodies  = []string{
		"", "{", "[]", "null", `{"uid":"u1"}`, `{"uid":""}`, `{"uid":5}`, `{"value":"v"}`, `{"value":5}`,
		`{"uids":["a","b"]}`, `{"uids":[]}`, `{"uids":"a"}`, `{"channel_id":"c1","channel_type":1}`,
		`{"channel_id":"c1","channel_type":0}`, `{"read_seq":5}`, `{"read_seq":-1}`, `{"token":"t","device_level":1}`,
		`{"target_node":2}`, `{"node":1}`, `{"from_node":1,"to_node":1}`, `{"keys":["a"]}`, `{"x":1}`,
		`{"value":"` + strings.Repeat("v", 70<<10) + `"}`, strings.Repeat("{", 5000), "\x00\xff\xfe",
	}
)

// TestHTTPFuzz throws random requests at a real node: no answer may be a 500
// or a panic, every 5xx must be a retryable 503, and a request answered 4xx
// must not change anything (no command reaches Raft). FUZZ_REQUESTS sets
// the count (make chaos runs 100k).
func TestHTTPFuzz(t *testing.T) {
	n := 1500
	if v, _ := strconv.Atoi(os.Getenv("FUZZ_REQUESTS")); v > 0 {
		n = v
	}
	// The projector is off: it proposes in the background, and this test
	// checks that a refused request proposes nothing.
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 4,
		Tune: func(cfg *cluster.Config) { cfg.ProjectInterval = -1 }})
	node := c.Nodes[0]
	ts := slotstoretest.ServeAPI(t, node)
	client := &http.Client{Timeout: 15 * time.Second}
	rng := rand.New(rand.NewSource(42))
	counts := map[int]int{}
	start := time.Now()
	for i := 0; i < n; i++ {
		method := fuzzMethods[rng.Intn(4)] // mostly GET, PUT, POST, DELETE
		if rng.Intn(10) == 0 {
			method = fuzzMethods[rng.Intn(len(fuzzMethods))]
		}
		path := fuzzPaths[rng.Intn(len(fuzzPaths))]
		body := fuzzBodies[rng.Intn(len(fuzzBodies))]
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			continue // an unparseable URL never reaches the server
		}
		switch rng.Intn(4) {
		case 0:
		case 1:
			req.Header.Set("Content-Type", "application/json")
		case 2:
			req.Header.Set("Content-Type", "text/plain")
		default:
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set([]string{"If-Match", "If-None-Match", "X-Route-Revision", "Idempotency-Key"}[rng.Intn(4)],
				[]string{"*", `"1"`, "0", "abc", strings.Repeat("k", 300), fmt.Sprint(rng.Intn(5))}[rng.Intn(6)])
		}
		before := node.Stats().Commands
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode]++
		if resp.StatusCode >= 500 && (resp.StatusCode != 503 || !strings.Contains(string(out), `"retryable":true`)) {
			t.Fatalf("%s %s %.80q: %d %s", method, path, body, resp.StatusCode, out)
		}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != 404 && resp.StatusCode != 409 && resp.StatusCode != 412 {
			// Refused before any write: 404/409/412 may come back from the
			// state machine (a command that applied and was refused there).
			if after := node.Stats().Commands; after != before {
				t.Fatalf("%s %s answered %d but proposed %d commands", method, path, resp.StatusCode, after-before)
			}
		}
	}
	t.Logf("%d requests in %v, statuses %v", n, time.Since(start).Round(time.Millisecond), counts)
}
