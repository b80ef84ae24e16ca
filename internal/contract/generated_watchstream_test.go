package contract

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// genWatchStream drives the multiplexed watch stream through the generated
// client on a real node: it opens a stream, adds two watches (two keys)
// a write of each key comes as a
// change of its watch, every event's data as the spec says; a cancelled
// watch sends nothing more; a progress event keeps the stream alive.
func genWatchStream(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	schemas, err := genEventSchemas("/v1/watch/stream")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := c.OpenWatchStream(sctx, &client.OpenWatchStreamParams{ProgressIntervalMs: ptr(100)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("open: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := testutil.SSEEvents(resp.Body)
	next := func(want string) testutil.SSEEvent {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("the stream ended")
				}
				genCheckEventDataOf(t, schemas, ev)
				if ev.Event == "progress" && want != "progress" {
					continue
				}
				if ev.Event != want {
					t.Fatalf("event %q %s, want %s", ev.Event, ev.Data, want)
				}
				return ev
			case <-deadline:
				t.Fatalf("no %s event", want)
			}
		}
	}
	var opened client.WatchStreamOpened
	if err := json.Unmarshal([]byte(next("stream").Data), &opened); err != nil {
		t.Fatal(err)
	}
	added, err := c.AddWatchesWithResponse(ctx, opened.StreamId, client.WatchStreamAdd{Watches: []client.WatchSpec{
		{WatchId: 1, Resource: "kv", Key: ptr("gws-a")},
		{WatchId: 2, Resource: "kv", Key: ptr("gws-b")},
		{WatchId: 3, Resource: "kv", Key: ptr("gws-a"), Cursor: "AAAA"},
	}})
	genCheck(t, "add watches", added, err, http.StatusBadRequest) // a cursor of nothing: the whole add refused
	added, err = c.AddWatchesWithResponse(ctx, opened.StreamId, client.WatchStreamAdd{Watches: []client.WatchSpec{
		{WatchId: 1, Resource: "kv", Key: ptr("gws-a")},
		{WatchId: 2, Resource: "kv", Key: ptr("gws-b")},
	}})
	genCheck(t, "add watches", added, err, http.StatusOK)
	if len(added.JSON200.Watches) != 2 || added.JSON200.Watches[0].Cursor == "" || added.JSON200.Watches[1].Error != nil {
		t.Fatalf("added: %+v", added.JSON200)
	}
	for i, k := range []string{"gws-b", "gws-a"} {
		put, err := c.PutKVWithResponse(ctx, k, nil, client.KVWrite{Value: "v"})
		genCheck(t, "put "+k, put, err, http.StatusOK)
		var ch client.WatchStreamChange
		if err := json.Unmarshal([]byte(next("change").Data), &ch); err != nil {
			t.Fatal(err)
		}
		if ch.WatchId != uint64(2-i) || ch.Changes[0].Key.Key != k || ch.Cursor == "" {
			t.Fatalf("change %d: %+v", i, ch)
		}
	}
	gone, err := c.CancelWatchWithResponse(ctx, opened.StreamId, 1)
	genCheck(t, "cancel watch 1", gone, err, http.StatusNoContent)
	again, err := c.CancelWatchWithResponse(ctx, opened.StreamId, 1)
	genCheck(t, "cancel watch 1 again", again, err, http.StatusNotFound)
	for _, k := range []string{"gws-a", "gws-b"} {
		put, err := c.PutKVWithResponse(ctx, k, nil, client.KVWrite{Value: "w"})
		genCheck(t, "put "+k, put, err, http.StatusOK)
	}
	var ch client.WatchStreamChange
	if err := json.Unmarshal([]byte(next("change").Data), &ch); err != nil || ch.WatchId != 2 {
		t.Fatalf("after the cancel: %+v %v", ch, err)
	}
	next("progress")
}
