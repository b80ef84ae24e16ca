package routed

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
)

// The retry contract, against fake nodes: a fake node answers the route
// table (every slot in group 1, led by node leader), the node list (every
// fake's address) and, for /v1/kv/…, what its data handler says.

type fakeNode struct {
	id   int64
	srv  *httptest.Server
	hits atomic.Int64 // data requests
	data http.HandlerFunc
}

type fakeCluster struct {
	nodes  []*fakeNode
	leader atomic.Int64 // the node the route table names (0: none)
	routes atomic.Int64 // GET /v1/cluster/routes answered
	resolv atomic.Int64 // POST /v1/cluster/routes/resolve answered
}

func newFakeCluster(t *testing.T, n int) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{}
	for i := range n {
		fn := &fakeNode{id: int64(i + 1)}
		fn.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fc.serve(fn, w, r) }))
		t.Cleanup(fn.srv.Close)
		fc.nodes = append(fc.nodes, fn)
	}
	return fc
}

func (fc *fakeCluster) serve(fn *fakeNode, w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v1/cluster/routes":
		fc.routes.Add(1)
		rt := client.Routes{Revision: 1}
		for s := range slotCount {
			hs := client.HashSlotRoute{HashSlot: s, Group: 1}
			if l := fc.leader.Load(); l != 0 {
				term := int64(1)
				hs.LeaderNode, hs.LeaderTerm = &l, &term
			}
			rt.HashSlots = append(rt.HashSlots, hs)
		}
		_ = json.NewEncoder(w).Encode(rt)
	case r.URL.Path == "/v1/cluster/nodes":
		var list client.NodeList
		for _, n := range fc.nodes {
			addr := strings.TrimPrefix(n.srv.URL, "http://")
			list.Items = append(list.Items, client.Node{Id: n.id, ApiAddr: &addr})
		}
		_ = json.NewEncoder(w).Encode(list)
	case r.URL.Path == "/v1/cluster/routes/resolve":
		fc.resolv.Add(1)
		_ = json.NewEncoder(w).Encode(client.ResolvedRoutes{Revision: 1})
	case strings.HasPrefix(r.URL.Path, "/v1/kv/") || r.URL.Path == "/v1/cluster/groups":
		fn.hits.Add(1)
		fn.data(w, r)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func errorAnswer(w http.ResponseWriter, status int, code client.ErrorCode, retryable bool, extra func(*client.Error)) {
	e := client.ErrorBody{Error: client.Error{Code: code, Message: string(code), Retryable: retryable}}
	if extra != nil {
		extra(&e.Error)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e)
}

func okKV(w http.ResponseWriter, _ *http.Request) {
	_ = json.NewEncoder(w).Encode(client.KV{Key: "k", Value: "v", Revision: 1})
}

func newTestClient(t *testing.T, fc *fakeCluster, tune func(*Config)) *Client {
	t.Helper()
	cfg := Config{NoRouteStream: true, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	for _, n := range fc.nodes {
		cfg.Endpoints = append(cfg.Endpoints, n.srv.URL)
	}
	if tune != nil {
		tune(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func getKV(t *testing.T, c *Client, timeout time.Duration) (*client.GetKVResponse, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	r, err := c.API().GetKVWithResponse(ctx, "k", nil)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	return r, time.Since(start)
}

// TestRetryableAnswerWaitsItsRetryAfter: busy (retryable, Retry-After: 1)
// is asked again after a second, and the second answer is the answer.
func TestRetryableAnswerWaitsItsRetryAfter(t *testing.T) {
	fc := newFakeCluster(t, 1)
	fc.leader.Store(1)
	var n atomic.Int64
	fc.nodes[0].data = func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			errorAnswer(w, http.StatusServiceUnavailable, client.ErrorCodeBusy, true, nil)
			return
		}
		okKV(w, r)
	}
	c := newTestClient(t, fc, nil)
	r, took := getKV(t, c, 10*time.Second)
	if r.StatusCode() != 200 || n.Load() != 2 || took < time.Second {
		t.Fatalf("status %d after %d attempts in %v; want 200 after 2, a second apart", r.StatusCode(), n.Load(), took)
	}
}

// TestNotRetryableAnswerIsReturned: an answer the server does not mark
// retryable is the answer at once, whatever its status.
func TestNotRetryableAnswerIsReturned(t *testing.T) {
	fc := newFakeCluster(t, 1)
	fc.leader.Store(1)
	fc.nodes[0].data = func(w http.ResponseWriter, _ *http.Request) {
		errorAnswer(w, http.StatusServiceUnavailable, client.ErrorCodeTimeout, false, nil)
	}
	c := newTestClient(t, fc, nil)
	if r, _ := getKV(t, c, 5*time.Second); r.StatusCode() != 503 || fc.nodes[0].hits.Load() != 1 {
		t.Fatalf("status %d after %d attempts; want the 503 after 1", r.StatusCode(), fc.nodes[0].hits.Load())
	}
}

// TestRetryAfterPastTheDeadlineIsNotWaited: a Retry-After that would pass
// the caller's deadline returns the answer now instead of sleeping into it.
func TestRetryAfterPastTheDeadlineIsNotWaited(t *testing.T) {
	fc := newFakeCluster(t, 1)
	fc.leader.Store(1)
	fc.nodes[0].data = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "5")
		errorAnswer(w, http.StatusServiceUnavailable, client.ErrorCodeRouteNotReady, true, nil)
	}
	c := newTestClient(t, fc, nil)
	r, took := getKV(t, c, 2*time.Second)
	if r.StatusCode() != 503 || took > time.Second || fc.nodes[0].hits.Load() != 1 {
		t.Fatalf("status %d in %v after %d attempts; want the 503 at once", r.StatusCode(), took, fc.nodes[0].hits.Load())
	}
}

// TestNotLeaderHintIsFollowedAtOnce: node 1 says node 2 leads; the retry
// goes to node 2 without waiting the Retry-After, and the client believes
// the hint from then on.
func TestNotLeaderHintIsFollowedAtOnce(t *testing.T) {
	fc := newFakeCluster(t, 2)
	fc.leader.Store(1)
	fc.nodes[0].data = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3")
		errorAnswer(w, http.StatusServiceUnavailable, client.ErrorCodeNotLeader, true, func(e *client.Error) {
			hint := int64(2)
			e.LeaderHint = &hint
		})
	}
	fc.nodes[1].data = okKV
	c := newTestClient(t, fc, nil)
	r, took := getKV(t, c, 10*time.Second)
	if r.StatusCode() != 200 || took > 2*time.Second || fc.nodes[0].hits.Load() != 1 || fc.nodes[1].hits.Load() != 1 {
		t.Fatalf("status %d in %v, hits %d/%d; want 200 from node 2 at once", r.StatusCode(), took, fc.nodes[0].hits.Load(), fc.nodes[1].hits.Load())
	}
	if node, _ := c.Leader("k"); node != 2 {
		t.Fatalf("the client believes node %d leads; want the hint, 2", node)
	}
	getKV(t, c, 5*time.Second)
	if fc.nodes[0].hits.Load() != 1 {
		t.Fatal("the next request went to the old leader again")
	}
}

// TestHungNodeIsLeftAfterTheAttemptTimeout: the leader's node accepts the
// connection and never answers (a cut link); after AttemptTimeout the read
// goes to another node and is answered there, long before the caller's
// deadline.
func TestHungNodeIsLeftAfterTheAttemptTimeout(t *testing.T) {
	fc := newFakeCluster(t, 2)
	fc.leader.Store(1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	fc.nodes[0].data = func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	fc.nodes[1].data = okKV
	c := newTestClient(t, fc, func(cfg *Config) { cfg.AttemptTimeout = 200 * time.Millisecond })
	r, took := getKV(t, c, 10*time.Second)
	if r.StatusCode() != 200 || took > 3*time.Second || fc.nodes[1].hits.Load() != 1 {
		t.Fatalf("status %d in %v; want 200 from node 2 after one attempt timeout", r.StatusCode(), took)
	}
}

// TestAttemptsAreBounded: a node that keeps answering retryable errors is
// asked MaxAttempts times, and its last answer returned.
func TestAttemptsAreBounded(t *testing.T) {
	fc := newFakeCluster(t, 1)
	fc.leader.Store(1)
	fc.nodes[0].data = func(w http.ResponseWriter, _ *http.Request) {
		errorAnswer(w, http.StatusTooManyRequests, client.ErrorCodeQueueFull, true, nil)
	}
	c := newTestClient(t, fc, func(cfg *Config) { cfg.MaxAttempts = 3 })
	if r, _ := getKV(t, c, 5*time.Second); r.StatusCode() != 429 || fc.nodes[0].hits.Load() != 3 {
		t.Fatalf("status %d after %d attempts; want 429 after 3", r.StatusCode(), fc.nodes[0].hits.Load())
	}
}

// TestStaleSlotsRefreshOneAtATime: 64 requests at once, all told
// slot_migrating until the client asks for the slot's route, make the
// refresher ask a bounded number of times (one refresh per RefreshEvery),
// not once per request.
func TestStaleSlotsRefreshOneAtATime(t *testing.T) {
	fc := newFakeCluster(t, 1)
	fc.leader.Store(1)
	fc.nodes[0].data = func(w http.ResponseWriter, r *http.Request) {
		if fc.resolv.Load() == 0 { // moving until the client asked where the slot went
			errorAnswer(w, http.StatusServiceUnavailable, client.ErrorCodeSlotMigrating, true, nil)
			return
		}
		okKV(w, r)
	}
	c := newTestClient(t, fc, func(cfg *Config) {
		cfg.RefreshEvery = 200 * time.Millisecond
		cfg.Backoff, cfg.MaxBackoff = 50*time.Millisecond, 100*time.Millisecond
	})
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() { getKV(t, c, 10*time.Second) })
	}
	wg.Wait()
	took := time.Since(start)
	if max := int64(took/(200*time.Millisecond)) + 2; fc.resolv.Load() > max || fc.resolv.Load() == 0 {
		t.Fatalf("%d resolves in %v (at most %d allowed, at least one)", fc.resolv.Load(), took, max)
	}
}

// TestATimedOutProposalIsNotResentWithoutAKey: a cluster operation (it
// takes no Idempotency-Key) answered 504 timeout — retryable, but it may
// still commit — is answered, not sent again; a data write answered the
// same is sent again with the Idempotency-Key the client gave it, the same
// key both times.
func TestATimedOutProposalIsNotResentWithoutAKey(t *testing.T) {
	fc := newFakeCluster(t, 1)
	fc.leader.Store(1)
	var keys []string
	var mu sync.Mutex
	fc.nodes[0].data = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		if r.URL.Path == "/v1/cluster/groups" || n == 1 {
			errorAnswer(w, http.StatusGatewayTimeout, client.ErrorCodeTimeout, true, nil)
			return
		}
		okKV(w, r)
	}
	c := newTestClient(t, fc, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	put, err := c.API().PutKVWithResponse(ctx, "k", nil, client.KVWrite{Value: "v"})
	if err != nil || put.StatusCode() != 200 || len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("data write: %v %v, keys %q; want 200 after a resend under one key", err, put.StatusCode(), keys)
	}
	keys = nil
	g, err := c.API().CreateGroupWithResponse(ctx, client.CreateGroupRequest{})
	if err != nil || g.StatusCode() != http.StatusGatewayTimeout || len(keys) != 1 || keys[0] != "" {
		t.Fatalf("cluster operation: %v %v, sent %d times (keys %q); want the 504 after one send without a key", err, g.StatusCode(), len(keys), keys)
	}
}

// TestAttemptTimeoutBoundsTheHeadOnly: an answer whose head comes at once
// and whose body takes longer than AttemptTimeout is read whole (a stream,
// a long listing), not cut at the timeout.
func TestAttemptTimeoutBoundsTheHeadOnly(t *testing.T) {
	fc := newFakeCluster(t, 1)
	fc.leader.Store(1)
	fc.nodes[0].data = func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
		okKV(w, r)
	}
	c := newTestClient(t, fc, func(cfg *Config) { cfg.AttemptTimeout = 100 * time.Millisecond })
	r, _ := getKV(t, c, 5*time.Second)
	if r.StatusCode() != 200 || r.JSON200 == nil || r.JSON200.Value != "v" {
		t.Fatalf("status %d, body %q", r.StatusCode(), r.Body)
	}
}
