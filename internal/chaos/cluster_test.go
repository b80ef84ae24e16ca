package chaos

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client/routed"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// endpoints is what the workload clients need of a cluster: its nodes' API
// base URLs and one HTTP exchange with a node. testCluster (in-process
// nodes) and hostCluster (processes on network-namespace hosts,
// hosts_test.go) provide it.
type endpoints interface {
	size() int
	url(i int) string
	anyURL(rng *rand.Rand) string
	do(base string, r request) answer
}

// testCluster is a real in-process cluster (slotstoretest) with one HTTP API
// server per node, on the address the node advertises. Clients pick a
// node's URL per request, or let the route-aware client (smart) pick the
// key's leader. A node restarts like a process: its API server closes
// first (connections are refused until the node is back, on a new server
// at the same address).
type testCluster struct {
	t      *testing.T
	c      *slotstoretest.Cluster
	groups int
	client *http.Client
	smart  *routed.Client // the route-aware client of every node

	mu      sync.RWMutex
	urls    []string
	servers []*httptest.Server

	// retired sums the snapshot counters of nodes closed by restart.
	retired cluster.SnapshotStats
	// cutStreams, if set, ends the watch streams node i serves; restart
	// calls it first, as a process's death would (the server's Close
	// waits for the requests it serves, and a stream does not end alone).
	cutStreams func(i int)
	fillSeq    int // fill's last key number (fault goroutine only)
}

func startCluster(t *testing.T, o slotstoretest.Options) *testCluster {
	tc := &testCluster{t: t, c: slotstoretest.Start(t, o), groups: o.Groups,
		client: &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	t.Cleanup(tc.client.CloseIdleConnections)
	tc.urls = make([]string, len(tc.c.Nodes))
	tc.servers = make([]*httptest.Server, len(tc.c.Nodes))
	for i := range tc.c.Nodes {
		tc.serve(i)
	}
	var err error
	tc.smart, err = routed.New(routed.Config{Endpoints: tc.urls, MaxAttempts: 3, AttemptTimeout: 3 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tc.smart.Close() })
	return tc
}

// serve starts an API server for node i (0-based) at its advertised
// address and publishes its URL.
func (tc *testCluster) serve(i int) {
	ts := slotstoretest.ServeAPIAt(tc.t, tc.c.Nodes[i], tc.c.APIAddr(i))
	tc.mu.Lock()
	tc.urls[i], tc.servers[i] = ts.URL, ts
	tc.mu.Unlock()
}

func (tc *testCluster) size() int { return len(tc.urls) }

// url is node i's API base URL.
func (tc *testCluster) url(i int) string {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	return tc.urls[i]
}

// anyURL is a random node's API base URL.
func (tc *testCluster) anyURL(rng *rand.Rand) string { return tc.url(rng.Intn(tc.size())) }

// restart stops node i's API server as cmd/server does (its streams end,
// the requests it is serving are answered), restarts the node on its data
// (waiting until the cluster is ready) and serves it again.
func (tc *testCluster) restart(i int) {
	tc.mu.RLock()
	old := tc.servers[i]
	tc.mu.RUnlock()
	if tc.cutStreams != nil {
		tc.cutStreams(i)
	}
	slotstoretest.StopAPI(old) // drained as cmd/server drains: its streams end (the route-aware client's too)
	node := tc.c.Nodes[i]
	tc.c.Restart(i)
	tc.retired = addSnapshots(tc.retired, node.Stats().Snapshots)
	tc.serve(i)
}

// snapshots sums the snapshot counters of every node the cluster ran.
func (tc *testCluster) snapshots() cluster.SnapshotStats {
	s := tc.retired
	for _, n := range tc.c.Nodes {
		s = addSnapshots(s, n.Stats().Snapshots)
	}
	return s
}

func addSnapshots(a, b cluster.SnapshotStats) cluster.SnapshotStats {
	return cluster.SnapshotStats{Received: a.Received + b.Received, Recovered: a.Recovered + b.Recovered,
		Sent: a.Sent + b.Sent, SendAborted: a.SendAborted + b.SendAborted}
}

// answer is one HTTP exchange as a client saw it.
type answer struct {
	code   int // 0: no answer (connection error, timeout)
	header http.Header
	body   []byte
}

// request is one HTTP call; a write may carry an Idempotency-Key.
type request struct {
	method, path, body string
	ifMatch            string // If-Match value ("" none)
	ifNoneMatch        bool   // If-None-Match: *
	idemKey            string
}

func (tc *testCluster) do(base string, r request) answer {
	return exchange(tc.t, tc.client, base, r, "")
}

// doSmart sends r through the route-aware client: to the leader of its
// key's group, retried by the error contract within 6 s.
func (tc *testCluster) doSmart(r request) answer {
	return exchange(tc.t, tc.smart, tc.url(0), r, "")
}

// smartSender is a cluster whose clients may send through the route-aware
// client (testCluster; not the namespace hosts).
type smartSender interface{ doSmart(r request) answer }

// doer sends one HTTP request: an *http.Client or a *routed.Client.
type doer interface {
	Do(*http.Request) (*http.Response, error)
}

// exchange sends r to base with client (token: a bearer token, or none)
// and reads the whole answer; no answer (a connection error, a timeout, a
// body cut short) is code 0. It gives up after 6 s (the route-aware
// client's retries included).
func exchange(t testing.TB, client doer, base string, r request, token string) answer {
	var rd io.Reader
	if r.body != "" {
		rd = strings.NewReader(r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, base+r.path, rd)
	if err != nil {
		t.Errorf("%s %s: %v", r.method, r.path, err)
		return answer{}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.ifMatch != "" {
		req.Header.Set("If-Match", r.ifMatch)
	}
	if r.ifNoneMatch {
		req.Header.Set("If-None-Match", "*")
	}
	if r.idemKey != "" {
		req.Header.Set("Idempotency-Key", r.idemKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{} // a cut-off answer says nothing definite
	}
	return answer{code: resp.StatusCode, header: resp.Header, body: b}
}

// outcome is what a client can conclude from an answer.
type outcome uint8

const (
	outOK       outcome = iota // 2xx: applied (a write) or read
	outRefused                 // 412: the condition did not hold; nothing changed
	outNotFound                // 404: absent; nothing changed
	outUnknown                 // no definite answer: a write may or may not have applied
)

var outcomeNames = [...]string{"ok", "refused", "not_found", "unknown"}

func (o outcome) String() string { return outcomeNames[o] }

// classify maps a status to an outcome. Timeouts, 429 and 5xx are unknown
// (the command may still be in a Raft log); a status no well-formed request
// of these clients should get is reported as a failure (unexpected).
func classify(code int) (o outcome, unexpected bool) {
	switch {
	case code >= 200 && code < 300:
		return outOK, false
	case code == http.StatusPreconditionFailed:
		return outRefused, false
	case code == http.StatusNotFound:
		return outNotFound, false
	case code == 0, code == http.StatusTooManyRequests, code >= 500:
		return outUnknown, code >= 500 && code != http.StatusServiceUnavailable
	}
	return outUnknown, true
}

// retryAfter is the pause an unknown answer asks for, bounded to keep the
// retries of a schedule short.
func (a answer) retryAfter() time.Duration {
	d := 50 * time.Millisecond
	if s, err := strconv.Atoi(a.header.Get("Retry-After")); err == nil && s > 0 {
		d = time.Duration(s) * time.Second
	}
	return min(d, 200*time.Millisecond)
}

// errorCode is the "code" of an error body ("" if none).
func (a answer) errorCode() string {
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}
