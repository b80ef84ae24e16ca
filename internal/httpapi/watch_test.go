package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// fakeChangeLog is a node's change logs in memory: commit keeps records
// and then publishes them, as a replica does.
type fakeChangeLog struct {
	hub   *watch.Hub
	mu    sync.Mutex
	slots map[slotstore.HashSlot][]watch.Record
	first map[slotstore.HashSlot]uint64 // the first kept sequence (retention)
}

func newFakeChangeLog(t testing.TB, cfg watch.Config) *fakeChangeLog {
	h, err := watch.NewHub(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeChangeLog{hub: h, slots: map[slotstore.HashSlot][]watch.Record{}, first: map[slotstore.HashSlot]uint64{}}
}

// commit numbers recs as one command in their (one) slot, keeps and publishes them.
func (l *fakeChangeLog) commit(recs ...watch.Record) {
	l.mu.Lock()
	s := recs[0].Slot
	next := uint64(len(l.slots[s])) + 1
	for i := range recs {
		recs[i].Slot, recs[i].Seq, recs[i].Batch = s, next+uint64(i), next
	}
	l.slots[s] = append(l.slots[s], recs...)
	l.mu.Unlock()
	l.hub.Publish(recs)
}

func (l *fakeChangeLog) Read(_ context.Context, s slotstore.HashSlot, after uint64, limit int) ([]watch.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.slots[s]
	if after >= uint64(len(kept)) {
		return nil, nil
	}
	if after+1 < l.first[s] {
		return nil, watch.ErrCompacted
	}
	return append([]watch.Record(nil), kept[after:min(len(kept), int(after)+limit)]...), nil
}

func (l *fakeChangeLog) Head(_ context.Context, s slotstore.HashSlot) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(len(l.slots[s])), nil
}

func userPut(uid, name string) watch.Record {
	return watch.Record{Slot: slotstore.HashSlotOfString(uid), Kind: watch.Put, Table: meta.TableUser, Key: []byte(uid),
		Value: meta.EncodeUser(&meta.User{UID: uid, Name: name, Revision: 1})}
}

// openWatch starts GET /v1/watch?query on srv with the Last-Event-ID lastID
// and returns its events as they come.
func openWatch(t *testing.T, srv *httptest.Server, query, lastID string) (*http.Response, <-chan testutil.SSEEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/watch?"+query, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	return resp, testutil.SSEEvents(resp.Body)
}

func next(t *testing.T, events <-chan testutil.SSEEvent, want string) testutil.SSEEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatalf("the stream ended, want a %s event", want)
		}
		if ev.Event != want {
			t.Fatalf("event %q (%s), want %q", ev.Event, ev.Data, want)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s event", want)
	}
	return testutil.SSEEvent{}
}

// TestWatchStream: a watch of one user starts with a progress event at the
// head, delivers that user's changes (not another's in the same slot) with
// the cursor as their id, and a reconnect with that id resumes after it —
// nothing repeated, nothing missed, the changes made while away included.
func TestWatchStream(t *testing.T) {
	be := newFake(t, 4)
	srv := httptest.NewServer(newHandler(t, be))
	t.Cleanup(srv.Close) // after the streams' own cleanups end them
	log := be.Watches().Log.(*fakeChangeLog)
	uid := "watched-user"
	log.commit(userPut(uid, "before")) // before the watch: not delivered
	resp, events := openWatch(t, srv, "resource=users&uid="+uid, "")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	start := next(t, events, "progress")
	other := ""
	for i := 0; other == "" || slotstore.HashSlotOfString(other) != slotstore.HashSlotOfString(uid); i++ {
		other = "other-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
	}
	log.commit(userPut(other, "not wanted"))
	log.commit(userPut(uid, "one"))
	ev := next(t, events, "change")
	var data watchEvent
	if err := json.Unmarshal([]byte(ev.Data), &data); err != nil {
		t.Fatal(err)
	}
	if len(data.Changes) != 1 || data.Changes[0].Kind != "put" || data.Changes[0].Resource != "users" || data.Changes[0].Key.UID != uid || data.Seq != 3 {
		t.Fatalf("event %s", ev.Data)
	}
	if v, _ := json.Marshal(data.Changes[0].Value); !strings.Contains(string(v), `"name":"one"`) {
		t.Fatalf("value %s", v)
	}
	if ev.ID == start.ID {
		t.Fatal("the cursor did not move with the event")
	}
	// Away: two changes; back with the last id.
	resp.Body.Close()
	log.commit(userPut(uid, "two"))
	log.commit(userPut(uid, "three"))
	_, events = openWatch(t, srv, "resource=users&uid="+uid, ev.ID)
	// The first mark is where the stream resumes, not past the changes it
	// is about to send: a client cut off right after it resumes from it
	// (the chaos watch found a first mark that skipped them).
	if mark := next(t, events, "progress"); mark.ID != ev.ID {
		t.Fatalf("the first mark after a resume is %s, not the resumed %s", mark.ID, ev.ID)
	}
	for _, want := range []string{"two", "three"} {
		ev := next(t, events, "change")
		if !strings.Contains(ev.Data, `"name":"`+want+`"`) {
			t.Fatalf("after the reconnect: %s, want %q", ev.Data, want)
		}
	}
	// A cursor of another watch is refused.
	resp, _ = openWatch(t, srv, "resource=users", ev.ID)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a cursor of one slot on a watch of all: %d", resp.StatusCode)
	}
}

// TestWatchRefusals: bad requests are 400 with the error JSON; a position
// out of retention is 410 compacted; watchers past the node's bound 429
// with Retry-After; a slow consumer is cut with an error event carrying
// the cursor to resume from.
func TestWatchRefusals(t *testing.T) {
	be := newFake(t, 4)
	srv := httptest.NewServer(newHandler(t, be))
	t.Cleanup(srv.Close) // after the streams' own cleanups end them
	for _, q := range []string{"", "resource=nope", "resource=users&channel_type=1&channel_id=c", "resource=kv&uid=u",
		"resource=users,channels&uid=u", "resource=kv&key=a&prefix=b", "resource=users&progress_interval_ms=1",
		"resource=users&cursor=" + url.QueryEscape("!!"), "resource=subscribers&channel_id=c"} {
		resp, _ := openWatch(t, srv, q, "")
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", q, resp.StatusCode)
		}
	}
	log := be.Watches().Log.(*fakeChangeLog)
	uid := "compacted-user"
	hs := slotstore.HashSlotOfString(uid)
	log.commit(userPut(uid, "a"))
	log.commit(userPut(uid, "b"))
	old := watch.NewCursor(hs)
	log.mu.Lock()
	log.first[hs] = 2
	log.mu.Unlock()
	resp, _ := openWatch(t, srv, "resource=users&uid="+uid, old.String())
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("a compacted position: %d, want 410", resp.StatusCode)
	}
	// The hub holds 4: the fifth is refused.
	var slow <-chan testutil.SSEEvent
	for i := range 4 {
		_, events := openWatch(t, srv, "resource=users&uid="+uid, "")
		next(t, events, "progress")
		if i == 0 {
			slow = events
		}
	}
	resp, _ = openWatch(t, srv, "resource=users&uid="+uid, "")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a watcher past the bound: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// 65 records at once overflow a 64-record queue: every watcher is cut.
	batch := make([]watch.Record, 65)
	for i := range batch {
		batch[i] = userPut(uid, "x")
	}
	log.commit(batch...)
	ev := next(t, slow, "error")
	if !strings.Contains(ev.Data, `"code":"slow_consumer"`) || ev.ID == "" {
		t.Fatalf("the cut: %+v", ev)
	}
	if _, err := watch.ParseCursor(ev.ID); err != nil {
		t.Fatalf("the cut's cursor: %v", err)
	}
	// The cuts show in the metrics, the streams leave the gauge.
	testutil.WaitUntil(t, 10*time.Second, 10*time.Millisecond, "the cut streams end", func() bool {
		m := scrape(t, srv.URL)
		return strings.Contains(m, `slotmeta_watch_ended_total{code="slow_consumer"} 4`) && strings.Contains(m, "slotmeta_watch_streams 0")
	})
}

// TestWatchResourcesShowTheirRows: every resource a watch names shows a
// stored row of its table (a resource without a decoder would fail the
// stream at its first change).
func TestWatchResourcesShowTheirRows(t *testing.T) {
	rows := map[meta.Table][]byte{
		meta.TableUser: meta.EncodeUser(&meta.User{UID: "u"}), meta.TableKV: meta.EncodeKV(&meta.KV{Key: "k"}),
		meta.TableDevice: meta.EncodeDevice(&meta.Device{UID: "u"}), meta.TableSystemUID: meta.EncodeSystemUID(&meta.SystemUID{UID: "u"}),
		meta.TablePlugin: meta.EncodePluginBinding(&meta.PluginBinding{UID: "u"}), meta.TableChannel: meta.EncodeChannel(&meta.Channel{}),
		meta.TableSubscriber: meta.EncodeChannelMember(&meta.ChannelMember{UID: "u"}), meta.TableDenylist: meta.EncodeChannelMember(&meta.ChannelMember{UID: "u"}),
		meta.TableAllowlist: meta.EncodeChannelMember(&meta.ChannelMember{UID: "u"}), meta.TableMembership: meta.EncodeMembership(&meta.Membership{}),
		meta.TableCmdBinding: meta.EncodeCmdBinding(&meta.CmdBinding{}), meta.TableRuntime: meta.EncodeChannelRuntime(&meta.ChannelRuntime{}),
	}
	for _, r := range watchResources {
		if r.by == byRoutes {
			continue
		}
		raw, ok := rows[r.table]
		if !ok || !r.table.Watched() {
			t.Errorf("%s: table %d has no test row or is not watched", r.name(), r.table)
			continue
		}
		if v, err := r.show(raw); err != nil || v == nil {
			t.Errorf("%s: %v, %v", r.name(), v, err)
		}
	}
}

// TestWatchRoutes: resource=routes starts with the whole table and sends
// it again at a leader change (coalesced to the latest), without an id;
// filters and other resources beside it are refused.
func TestWatchRoutes(t *testing.T) {
	be := newFake(t, 4)
	srv := httptest.NewServer(newHandler(t, be))
	t.Cleanup(srv.Close)
	for _, q := range []string{"resource=routes,users", "resource=routes&uid=u", "resource=routes&cursor=x"} {
		if resp, _ := openWatch(t, srv, q, ""); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", q, resp.StatusCode)
		}
	}
	_, events := openWatch(t, srv, "resource=routes", "")
	var tbl routesJSON
	ev := next(t, events, "routes")
	if err := json.Unmarshal([]byte(ev.Data), &tbl); err != nil || tbl.Revision != 1 || len(tbl.HashSlots) != 256 || ev.ID != "" {
		t.Fatalf("the first routes event: %+v %v", ev, err)
	}
	if tbl.HashSlots[0].LeaderNode != 1 {
		t.Fatalf("slot 0's leader %d, want 1", tbl.HashSlots[0].LeaderNode)
	}
	be.router.SetLeader(tbl.HashSlots[0].Group, 3, 9)
	ev = next(t, events, "routes")
	if err := json.Unmarshal([]byte(ev.Data), &tbl); err != nil || tbl.HashSlots[0].LeaderNode != 3 {
		t.Fatalf("after the leader change: slot 0 led by %d (%v)", tbl.HashSlots[0].LeaderNode, err)
	}
}

// TestWatchOutlivesTheServersTimeouts: a stream goes on past the server's
// ReadTimeout and WriteTimeout (cmd/server sets 30 s each): net/http clears
// the read deadline of the background read that watches for the client
// going away, and every event moves the write deadline on.
func TestWatchOutlivesTheServersTimeouts(t *testing.T) {
	be := newFake(t, 4)
	srv := httptest.NewUnstartedServer(newHandler(t, be))
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	_, events := openWatch(t, srv, "resource=users&progress_interval_ms=100", "")
	for i := range 10 { // a second: five of each timeout
		if ev := next(t, events, "progress"); ev.ID == "" {
			t.Fatalf("progress %d without an id", i)
		}
	}
}

// scrape reads the API's /metrics.
func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWatchStreamsEndWhenTheServerStops: closing Config.Stopping (the
// server starts to drain) ends a data watch with a route_not_ready error
// event carrying its cursor, and a route stream plainly — a graceful
// shutdown does not wait for them.
func TestWatchStreamsEndWhenTheServerStops(t *testing.T) {
	be := newFake(t, 4)
	stopping := make(chan struct{})
	srv := httptest.NewServer(newHandler(t, be, func(c *Config) { c.Stopping = stopping }))
	t.Cleanup(srv.Close)
	_, data := openWatch(t, srv, "resource=users", "")
	mark := next(t, data, "progress")
	_, routes := openWatch(t, srv, "resource=routes", "")
	next(t, routes, "routes")
	close(stopping)
	ev := next(t, data, "error")
	if !strings.Contains(ev.Data, `"route_not_ready"`) || ev.ID != mark.ID {
		t.Fatalf("the data watch ended with %+v, want route_not_ready at %s", ev, mark.ID)
	}
	for _, events := range []<-chan testutil.SSEEvent{data, routes} {
		select {
		case ev, ok := <-events:
			if ok {
				t.Fatalf("after the stop: %+v", ev)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a stream did not end when the server stopped")
		}
	}
}
