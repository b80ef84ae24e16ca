package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// openStream opens GET /v1/watch/stream?query and returns its id and its
// events after the first.
func openStream(t *testing.T, srv *httptest.Server, query string) (string, <-chan testutil.SSEEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+streamPath+"?"+query, nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("open: %d", resp.StatusCode)
	}
	events := testutil.SSEEvents(resp.Body)
	var first muxStreamJSON
	if err := json.Unmarshal([]byte(next(t, events, "stream").Data), &first); err != nil || len(first.StreamID) != 32 {
		t.Fatalf("stream event: %+v %v", first, err)
	}
	return first.StreamID, events
}

// addWatches posts body to the stream and returns the status and answer.
func addWatches(t *testing.T, srv *httptest.Server, id, body string) (int, muxAddedJSON, string) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+streamPath+"/"+id, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	var out muxAddedJSON
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, out, buf.String()
}

func cancelWatch(t *testing.T, srv *httptest.Server, id, watchID string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+streamPath+"/"+id+"/"+watchID, nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// nextChange is the next change event, progress events skipped.
func nextChange(t *testing.T, events <-chan testutil.SSEEvent) muxChangeJSON {
	t.Helper()
	for {
		ev := anyEvent(t, events)
		if ev.Event == "progress" {
			continue
		}
		var c muxChangeJSON
		if ev.Event != "change" || json.Unmarshal([]byte(ev.Data), &c) != nil || len(c.Changes) == 0 {
			t.Fatalf("event %q %s, want a change", ev.Event, ev.Data)
		}
		return c
	}
}

// sameSlot returns a uid other than uid in uid's hash slot.
func sameSlot(uid string) string {
	for i := 0; ; i++ {
		other := "other-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		if slotstore.HashSlotOfString(other) == slotstore.HashSlotOfString(uid) {
			return other
		}
	}
}

// TestWatchStreamCarriesManyWatches: one stream carries the watches added
// to it, each change with its watch's id and cursor and none of what no
// watch wants; a cancelled watch sends nothing more; a watch added from a
// cursor resumes after it; a watch that cannot start (compacted, id in
// use, the node's bound) is refused alone, the others added; a filtered
// change moves a watch's position, which the next progress event tells.
func TestWatchStreamCarriesManyWatches(t *testing.T) {
	be := newFake(t, 4)
	srv := httptest.NewServer(newHandler(t, be))
	t.Cleanup(srv.Close) // after the streams' own cleanups end them
	log := be.Watches().Log.(*fakeChangeLog)
	id, events := openStream(t, srv, "progress_interval_ms=100")

	status, added, body := addWatches(t, srv, id, `{"watches":[
		{"watch_id":1,"resource":"users","uid":"a"},
		{"watch_id":2,"resource":"users","uid":"b"},
		{"watch_id":7,"resource":"kv","key":"k"}]}`)
	if status != http.StatusOK || len(added.Watches) != 3 || added.Watches[2].WatchID != 7 || added.Watches[2].Cursor == "" {
		t.Fatalf("add: %d %s", status, body)
	}
	log.commit(userPut("c", "nobody watches"))
	log.commit(userPut("b", "b1"))
	log.commit(userPut("a", "a1"))
	log.commit(kvPut("k", "v1"))
	var aAfter1 string
	for _, want := range []struct {
		id   uint64
		text string
	}{{2, `"name":"b1"`}, {1, `"name":"a1"`}, {7, `"v1"`}} {
		c := nextChange(t, events)
		if v, _ := json.Marshal(c.Changes); c.WatchID != want.id || !strings.Contains(string(v), want.text) || c.Cursor == "" {
			t.Fatalf("change %+v %s, want watch %d with %s", c, v, want.id, want.text)
		}
		if c.WatchID == 1 {
			aAfter1 = c.Cursor
		}
	}

	if got := cancelWatch(t, srv, id, "2"); got != http.StatusNoContent {
		t.Fatalf("cancel: %d", got)
	}
	if got := cancelWatch(t, srv, id, "2"); got != http.StatusNotFound {
		t.Fatalf("cancel again: %d", got)
	}
	log.commit(userPut("b", "b2"))
	log.commit(userPut("a", "a2"))
	if c := nextChange(t, events); c.WatchID != 1 {
		t.Fatalf("after the cancel: change of watch %d", c.WatchID)
	}

	// Watch 3 resumes a's watch after a1: it gets a2. A compacted position
	// is refused; watch 1's id is in use; and the fake node's hub takes
	// four watchers — 1, 7, 3 and the second 1 (opened before its id is
	// found in use): watch 5 is one too many.
	hs := slotstore.HashSlotOfString("a")
	log.mu.Lock()
	log.first[hs] = 2
	log.mu.Unlock()
	old := watch.NewCursor(hs)
	status, added, body = addWatches(t, srv, id, `{"watches":[
		{"watch_id":3,"resource":"users","uid":"a","cursor":"`+aAfter1+`"},
		{"watch_id":4,"resource":"users","uid":"a","cursor":"`+old.String()+`"},
		{"watch_id":1,"resource":"users","uid":"a"},
		{"watch_id":5,"resource":"users","uid":"z"}]}`)
	if status != http.StatusOK || len(added.Watches) != 4 {
		t.Fatalf("second add: %d %s", status, body)
	}
	for i, want := range []slotstore.Code{"", slotstore.CodeCompacted, slotstore.CodeConflict, slotstore.CodeRateLimited} {
		got := added.Watches[i]
		if (got.Error == nil) != (want == "") || got.Error != nil && got.Error.Code != want {
			t.Errorf("watch %d: %s, want %q", got.WatchID, mustText(got), want)
		}
	}
	if c := nextChange(t, events); c.WatchID != 3 || !strings.Contains(mustText(c.Changes), `"name":"a2"`) {
		t.Fatalf("the resumed watch: %+v", c)
	}

	// A change watch 7 does not want moves its position without an event;
	// a progress event tells it.
	log.commit(kvPut(sameSlot("k"), "x"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		ev := anyEvent(t, events)
		var p muxProgressJSON
		if ev.Event != "progress" || json.Unmarshal([]byte(ev.Data), &p) != nil {
			t.Fatalf("event %q %s, want progress", ev.Event, ev.Data)
		}
		if len(p.Watches) == 1 && p.Watches[0].WatchID == 7 {
			c, err := watch.ParseCursor(p.Watches[0].Cursor)
			if err != nil || c.Seq(slotstore.HashSlotOfString("k")) != 2 {
				t.Fatalf("watch 7 told %s (%v), want its slot at 2", p.Watches[0].Cursor, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no progress event told watch 7's new position")
		}
	}
}

func kvPut(key, value string) watch.Record {
	return watch.Record{Slot: slotstore.HashSlotOfString(key), Kind: watch.Put, Table: meta.TableKV, Key: []byte(key),
		Value: meta.EncodeKV(&meta.KV{Key: key, Value: []byte(value), Revision: 1})}
}

// anyEvent is the next event, whatever it is.
func anyEvent(t *testing.T, events <-chan testutil.SSEEvent) testutil.SSEEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return testutil.SSEEvent{}
}

func mustText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestWatchStreamRefusals: a stream takes no other parameter; adds and
// cancels name a stream of this node, valid watches, ids given once; a
// bad watch refuses the whole add.
func TestWatchStreamRefusals(t *testing.T) {
	be := newFake(t, 4)
	srv := httptest.NewServer(newHandler(t, be))
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL + streamPath + "?resource=users")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a stream with a resource: %d", resp.StatusCode)
	}
	id, _ := openStream(t, srv, "")
	for _, c := range []struct {
		id, body string
		want     int
	}{
		{strings.Repeat("0", 32), `{"watches":[{"watch_id":1,"resource":"users"}]}`, http.StatusNotFound},
		{"nothex", `{"watches":[{"watch_id":1,"resource":"users"}]}`, http.StatusBadRequest},
		{id, `{"watches":[]}`, http.StatusBadRequest},
		{id, `{"watches":[{"watch_id":0,"resource":"users"}]}`, http.StatusBadRequest},
		{id, `{"watches":[{"watch_id":1,"resource":"nope"}]}`, http.StatusBadRequest},
		{id, `{"watches":[{"watch_id":1,"resource":"routes"}]}`, http.StatusBadRequest},
		{id, `{"watches":[{"watch_id":1,"resource":"users"},{"watch_id":1,"resource":"kv"}]}`, http.StatusBadRequest},
		{id, `{"watches":[{"watch_id":1,"resource":"users"},{"watch_id":2,"resource":"kv","uid":"u"}]}`, http.StatusBadRequest},
		{id, `{"watches":[{"watch_id":1,"resource":"users","extra":1}]}`, http.StatusBadRequest},
	} {
		if status, _, body := addWatches(t, srv, c.id, c.body); status != c.want || !strings.Contains(body, `"error"`) {
			t.Errorf("add %s to %s: %d %s, want %d", c.body, c.id, status, body, c.want)
		}
	}
	if n := be.Watches().Hub.Subscribers(); n != 0 {
		t.Fatalf("refused adds left %d subscribers", n)
	}
	for _, wid := range []string{"0", "x", "-1"} {
		if got := cancelWatch(t, srv, id, wid); got != http.StatusBadRequest {
			t.Errorf("cancel %q: %d", wid, got)
		}
	}
}

// TestWatchStreamProgressIsSplit: a progress event lists at most
// progressPerEvent positions; more moved watches make more events.
func TestWatchStreamProgressIsSplit(t *testing.T) {
	n := progressPerEvent
	t.Cleanup(func() { progressPerEvent = n }) // the last cleanup: after the server's, which waits for the stream
	progressPerEvent = 1
	be := newFake(t, 4)
	srv := httptest.NewServer(newHandler(t, be))
	t.Cleanup(srv.Close)
	log := be.Watches().Log.(*fakeChangeLog)
	id, events := openStream(t, srv, "progress_interval_ms=100")
	if status, _, body := addWatches(t, srv, id, `{"watches":[
		{"watch_id":1,"resource":"kv","key":"p1"},
		{"watch_id":2,"resource":"kv","key":"p2"}]}`); status != http.StatusOK {
		t.Fatalf("add: %d %s", status, body)
	}
	// Changes neither watch wants move both positions.
	log.commit(kvPut(sameSlot("p1"), "x"))
	log.commit(kvPut(sameSlot("p2"), "y"))
	seen := map[uint64]bool{}
	for deadline := time.Now().Add(10 * time.Second); len(seen) < 2; {
		ev := anyEvent(t, events)
		var p muxProgressJSON
		if ev.Event != "progress" || json.Unmarshal([]byte(ev.Data), &p) != nil || len(p.Watches) > 1 {
			t.Fatalf("event %q %s, want progress events of one position at most", ev.Event, ev.Data)
		}
		for _, w := range p.Watches {
			seen[w.WatchID] = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("positions told: %v, want watches 1 and 2", seen)
		}
	}
}

// TestTheConsolesStreamHasNoDeadline: the console's stream (the one it
// forwards to /v1/watch/stream for its live tails) is a stream like the
// API's: the request deadline is not set on it, as it is on every other
// console request (a stream that ended with the deadline would drop the
// tails back to polling after RequestTimeout).
func TestTheConsolesStreamHasNoDeadline(t *testing.T) {
	deadlines := map[string]bool{}
	h := newHandler(t, newFake(t, 1), func(c *Config) {
		c.RequestTimeout = time.Minute
		c.Console = func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, deadlines[r.URL.Path] = r.Context().Deadline()
			})
		}
	})
	do(t, h, "GET", "/console/stream", "")
	do(t, h, "GET", "/console/groups", "")
	if deadlines["/console/stream"] || !deadlines["/console/groups"] {
		t.Fatalf("deadlines set: %v", deadlines)
	}
}
