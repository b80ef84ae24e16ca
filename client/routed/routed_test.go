package routed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// realCluster is three real nodes (dragonboat, Pebble, the HTTP API on the
// addresses they advertise) and a routed client of them.
type realCluster struct {
	c       *slotstoretest.Cluster
	servers []*httptest.Server
	client  *Client
}

func startReal(t *testing.T, tune func(*Config)) *realCluster {
	t.Helper()
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 4})
	rc := &realCluster{c: c, servers: c.ServeAPIs()}
	cfg := Config{Endpoints: []string{rc.servers[0].URL, rc.servers[1].URL}}
	if tune != nil {
		tune(&cfg)
	}
	var err error
	if rc.client, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.client.Close() })
	testutil.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() (bool, string) {
		t := rc.client.view.load()
		for s := range slotCount {
			if node, _ := t.leaderOf(s); node == 0 || t.nodes[node] == nil {
				return false, fmt.Sprintf("slot %d has no known leader", s)
			}
		}
		return true, ""
	})
	return rc
}

// nodeAt is the node whose API answered at host.
func (rc *realCluster) nodeAt(host string) uint64 {
	for i, s := range rc.servers {
		if strings.TrimPrefix(s.URL, "http://") == host {
			return uint64(i + 1)
		}
	}
	return 0
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestRequestsGoToTheLeader: writes and linearizable reads of keys of
// every group are sent to the node that leads the key's group, as the
// answer's X-Leader-Node confirms — no forward hop. A leader may move
// while the test runs (the controller settles preferred leaders), so a
// few misses are allowed; through a random node two thirds would miss.
func TestRequestsGoToTheLeader(t *testing.T) {
	rc := startReal(t, nil)
	api := rc.client.API()
	const n = 60
	hits := 0
	for i := range n {
		key := fmt.Sprintf("lead-%d", i)
		r, err := api.PutKVWithResponse(ctxFor(t, 10*time.Second), key, nil, client.KVWrite{Value: "v"})
		if err != nil || r.StatusCode() != 200 {
			t.Fatalf("put %s: %v %d %s", key, err, r.StatusCode(), r.Body)
		}
		g, err := api.GetKVWithResponse(ctxFor(t, 10*time.Second), key, nil)
		if err != nil || g.JSON200 == nil || g.JSON200.Value != "v" {
			t.Fatalf("get %s: %v %s", key, err, g.Body)
		}
		for _, h := range []*http.Response{r.HTTPResponse, g.HTTPResponse} {
			leader, _ := strconv.ParseUint(h.Header.Get("X-Leader-Node"), 10, 64)
			if leader != 0 && rc.nodeAt(h.Request.URL.Host) == leader {
				hits++
			}
		}
	}
	if hits < 2*n-6 {
		t.Fatalf("%d of %d requests went to their group's leader", hits, 2*n)
	}
	if s := rc.client.Stats(); s.Direct < s.Requests-6 {
		t.Fatalf("stats %+v: most requests should be sent directly", s)
	}
}

// TestRouteKeysMatchTheServer: for a request of every kind of path, the
// hash slot the client computes from it is the one the server routes it by
// (the answer's X-Hash-Slot).
func TestRouteKeysMatchTheServer(t *testing.T) {
	rc := startReal(t, nil)
	api := rc.client.API()
	ctx := ctxFor(t, 30*time.Second)
	uid, ch := "rk-user.1", "rk-chan"
	name := "Ada"
	var answers []*http.Response
	add := func(r *http.Response, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
		if r.StatusCode >= 300 {
			t.Fatalf("%s %s: %d", r.Request.Method, r.Request.URL, r.StatusCode)
		}
		answers = append(answers, r)
	}
	add(api.CreateUser(ctx, nil, client.UserCreate{Uid: uid, Name: &name}))
	add(api.GetUser(ctx, uid, nil))
	add(api.CreateChannel(ctx, nil, client.ChannelCreate{ChannelId: ch, ChannelType: 2}))
	add(api.AddChannelSubscribers(ctx, 2, ch, nil, client.ChannelMembersRequest{Uids: []string{"a", "b"}}))
	add(api.GetChannel(ctx, 2, ch, nil))
	add(api.PutKV(ctx, "rk/key with space", nil, client.KVWrite{Value: "x"}))
	add(api.GetKV(ctx, "rk/key with space", nil))
	for _, r := range answers {
		rq := classify(r.Request)
		got, _ := strconv.Atoi(r.Header.Get("X-Hash-Slot"))
		if !rq.keyed || r.Header.Get("X-Hash-Slot") == "" || slotOf(rq.key) != got {
			t.Errorf("%s %s: the client routes it by %q (slot %d), the server by slot %s",
				r.Request.Method, r.Request.URL.Path, rq.key, slotOf(rq.key), r.Header.Get("X-Hash-Slot"))
		}
	}
	// Every other keyed family, answered or not (a 404 carries the route
	// headers too): reads, a HEAD and a DELETE of what is not there.
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/users/rk-user.1/devices"}, {"GET", "/v1/users/rk-user.1/devices/1"},
		{"GET", "/v1/users/rk-user.1/plugins"}, {"GET", "/v1/users/rk-user.1/memberships"},
		{"GET", "/v1/users/rk-user.1/memberships/2/rk-chan"}, {"GET", "/v1/users/rk-user.1/cmd-bindings"},
		{"GET", "/v1/system-uids"}, {"GET", "/v1/channels/2/rk-chan/runtime"}, {"GET", "/v1/channels/2/rk-chan/events"},
		{"GET", "/v1/channels/2/rk-chan/migrations"}, {"GET", "/v1/channels/2/rk-chan/denylist"},
		{"GET", "/v1/channels/2/rk-chan/allowlist"}, {"GET", "/v1/channels/2/rk-chan/subscribers/a"},
		{"HEAD", "/v1/kv/rk%2Fkey%20with%20space"}, {"DELETE", "/v1/kv/rk-never-written"},
	} {
		req, err := http.NewRequestWithContext(ctx, r.method, rc.servers[0].URL+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rc.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusBadRequest || resp.StatusCode >= 500 {
			t.Fatalf("%s %s: %d", r.method, r.path, resp.StatusCode)
		}
		answers = append(answers, resp)
	}
	for _, r := range answers[7:] {
		rq := classify(r.Request)
		got, _ := strconv.Atoi(r.Header.Get("X-Hash-Slot"))
		if !rq.keyed || r.Header.Get("X-Hash-Slot") == "" || slotOf(rq.key) != got {
			t.Errorf("%s %s (%d): the client routes it by %q (slot %d), the server by slot %q",
				r.Request.Method, r.Request.URL.Path, r.StatusCode, rq.key, slotOf(rq.key), r.Header.Get("X-Hash-Slot"))
		}
	}
	for _, key := range []string{"", "a", "u1", "feature.flags", "ключ", systemUIDsRouteKey} {
		if slotOf(key) != int(slotstore.HashSlotOfString(key)) {
			t.Errorf("slot of %q: client %d, server %d", key, slotOf(key), slotstore.HashSlotOfString(key))
		}
	}
}

// TestFollowsALeaderTransfer: a group's leader moves; the route stream
// tells the client before it sends anything, and the next write goes to
// the new leader.
func TestFollowsALeaderTransfer(t *testing.T) {
	rc := startReal(t, nil)
	const key = "transfer-me"
	from, group := rc.client.Leader(key)
	to := from%3 + 1
	before, streamed := rc.client.Stats().Requests, rc.client.Stats().StreamEvents
	ctx := ctxFor(t, 20*time.Second)
	testutil.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() (bool, string) {
		err := rc.c.Nodes[0].TransferLeader(ctx, slotstore.GroupID(group), slotstore.NodeID(to))
		node, _ := rc.client.Leader(key)
		return node == to, fmt.Sprintf("the client believes node %d leads group %d (transfer: %v)", node, group, err)
	})
	if rc.client.Stats().Requests != before {
		t.Fatal("the client sent requests while it learnt the leader: it should have heard it from the stream")
	}
	if rc.client.Stats().StreamEvents == streamed {
		t.Fatal("no route table came from the stream after the transfer")
	}
	r, err := rc.client.API().PutKVWithResponse(ctx, key, nil, client.KVWrite{Value: "v"})
	if err != nil || r.StatusCode() != 200 {
		t.Fatalf("put: %v %v", err, r)
	}
	if got := rc.nodeAt(r.HTTPResponse.Request.URL.Host); got != to {
		t.Fatalf("the write went to node %d, the new leader is %d", got, to)
	}
}

// lossyTransport delivers every request and, for the first write it sees,
// loses the answer: the client cannot know whether it was applied.
type lossyTransport struct {
	base http.RoundTripper
	lost atomic.Int64
}

func (l *lossyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/users") && l.lost.Add(1) == 1 {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, errors.New("lossy: connection reset after the request was sent")
	}
	return resp, err
}

// TestALostAnswerIsRetriedOnce: the answer to a create is lost after the
// server applied it; the client sends it again with the Idempotency-Key it
// added, and the server answers the first result (201, replayed) — not 409
// conflict, which a second application would give. The user exists once.
func TestALostAnswerIsRetriedOnce(t *testing.T) {
	lossy := &lossyTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	rc := startReal(t, func(c *Config) { c.Transport = lossy })
	name := "Grace"
	ctx := ctxFor(t, 20*time.Second)
	r, err := rc.client.API().CreateUserWithResponse(ctx, nil, client.UserCreate{Uid: "once", Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode() != 201 || r.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" || lossy.lost.Load() < 2 {
		t.Fatalf("status %d, replayed %q, writes seen %d; want 201 replayed after a lost answer",
			r.StatusCode(), r.HTTPResponse.Header.Get("Idempotent-Replayed"), lossy.lost.Load())
	}
	again, err := rc.client.API().CreateUserWithResponse(ctx, nil, client.UserCreate{Uid: "once", Name: &name})
	if err != nil || again.StatusCode() != 409 {
		t.Fatalf("a new create of the same user: %v %d; want 409 conflict", err, again.StatusCode())
	}
}

// TestAStoppedLeaderIsRoutedAround: the node leading a key's group stops
// (its API refuses, its replicas are gone); writes through the client keep
// succeeding — on another node, which forwards to the new leader or is it.
func TestAStoppedLeaderIsRoutedAround(t *testing.T) {
	rc := startReal(t, nil)
	key := ""
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("stop-%d", i)
		if node, _ := rc.client.Leader(k); node == 3 { // not node 1: it serves the client's first endpoint
			key = k
		}
	}
	// A stopped process: every connection cut (the client's route stream
	// may be one of them; Close alone would wait for it), then the node.
	rc.servers[2].CloseClientConnections()
	rc.servers[2].Close()
	rc.c.StopNode(2)
	for i := range 5 {
		r, err := rc.client.API().PutKVWithResponse(ctxFor(t, 15*time.Second), key, nil, client.KVWrite{Value: fmt.Sprint(i)})
		if err != nil || r.StatusCode() != 200 {
			t.Fatalf("write %d after the leader stopped: %v %v", i, err, r)
		}
	}
	g, err := rc.client.API().GetKVWithResponse(ctxFor(t, 10*time.Second), key, nil)
	if err != nil || g.JSON200 == nil || g.JSON200.Value != "4" {
		t.Fatalf("read after: %v %s", err, g.Body)
	}
}

// TestBatchesAreSplitByLeader: a batch write and a batch read over every
// group go out as one request per leader node; every item is answered in
// its place, a bad key with its own error.
func TestBatchesAreSplitByLeader(t *testing.T) {
	rc := startReal(t, nil)
	ctx := ctxFor(t, 20*time.Second)
	var ops []client.KVBatchOp
	var keys []string
	put := "put"
	for i := range 300 {
		k, v := fmt.Sprintf("batch-%d", i), fmt.Sprint(i)
		ops = append(ops, client.KVBatchOp{Op: &put, Key: &k, Value: &v})
		keys = append(keys, k)
	}
	before := rc.client.Stats()
	if _, err := rc.client.BatchWriteKV(ctx, ops, ""); !errors.Is(err, ErrNoIdempotencyKey) {
		t.Fatalf("a batch write without a key: %v", err)
	}
	w, err := rc.client.BatchWriteKV(ctx, ops, NewIdempotencyKey())
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range w.Items {
		if !it.Ok || it.Key != keys[i] {
			t.Fatalf("item %d: %+v", i, it)
		}
	}
	after := rc.client.Stats()
	// One request per leader node (at most the three nodes; leaders may
	// share one), each sent straight to it (a retried part counts again).
	if parts := after.Requests - before.Requests; parts < 1 || parts > 3 || after.Direct-before.Direct < parts {
		t.Fatalf("the write went out as %d requests (%d direct); want one per leader node", parts, after.Direct-before.Direct)
	}
	keys = append(keys, "batch-missing", "")
	g, err := rc.client.BatchGetKV(ctx, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range g.Items[:300] {
		if !it.Found || it.Value == nil || *it.Value != fmt.Sprint(i) {
			t.Fatalf("item %d: %+v", i, it)
		}
	}
	if it := g.Items[300]; it.Found || it.Error != nil {
		t.Fatalf("missing key: %+v", it)
	}
	if it := g.Items[301]; it.Error == nil || it.Error.Code != client.ErrorCodeInvalidArgument {
		t.Fatalf("empty key: %+v", it)
	}
	// Users and channels the same way: found in their places, the rest not.
	name := "B"
	for _, uid := range []string{"bu-1", "bu-2", "bu-3"} {
		if r, err := rc.client.API().CreateUserWithResponse(ctx, nil, client.UserCreate{Uid: uid, Name: &name}); err != nil || r.StatusCode() != 201 {
			t.Fatalf("create %s: %v %v", uid, err, r)
		}
		if r, err := rc.client.API().CreateChannelWithResponse(ctx, nil, client.ChannelCreate{ChannelType: 1, ChannelId: uid}); err != nil || r.StatusCode() != 201 {
			t.Fatalf("create channel %s: %v %v", uid, err, r)
		}
	}
	us, err := rc.client.BatchGetUsers(ctx, []string{"bu-3", "bu-none", "bu-1", "bu-2"}, nil)
	if err != nil || !us.Items[0].Found || us.Items[1].Found || !us.Items[2].Found || us.Items[3].User == nil || us.Items[3].User.Uid != "bu-2" {
		t.Fatalf("batch users: %v %+v", err, us)
	}
	refs := []client.ChannelRef{{ChannelType: 1, ChannelId: "bu-2"}, {ChannelType: 2, ChannelId: "bu-2"}, {ChannelType: 1, ChannelId: "bu-3"}}
	cs, err := rc.client.BatchGetChannels(ctx, refs, nil)
	if err != nil || !cs.Items[0].Found || cs.Items[1].Found || cs.Items[2].Channel == nil || cs.Items[2].Channel.ChannelId != "bu-3" {
		t.Fatalf("batch channels: %v %+v", err, cs)
	}
	rts, err := rc.client.BatchGetChannelRuntime(ctx, refs, nil)
	if err != nil || len(rts.Items) != 3 || rts.Items[0].Found || rts.Items[0].Error != nil {
		t.Fatalf("batch runtime: %v %+v", err, rts)
	}
	if _, err := rc.client.BatchGetKV(ctx, make([]string, MaxBatch+1), nil); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("a batch over the bound: %v", err)
	}
}
