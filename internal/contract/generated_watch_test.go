package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// genWatchOpen opens GET /v1/watch through the generated client and
// returns its events as they come; the stream ends with the test.
func genWatchOpen(t *testing.T, c *client.ClientWithResponses, p *client.WatchParams, lastID string) <-chan testutil.SSEEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var edit []client.RequestEditorFn
	if lastID != "" {
		edit = append(edit, func(_ context.Context, r *http.Request) error { r.Header.Set("Last-Event-ID", lastID); return nil })
	}
	resp, err := c.Watch(ctx, p, edit...)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("watch: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return testutil.SSEEvents(resp.Body)
}

// genWatchEventSchemas are the schemas of GET /v1/watch's event data by
// event name.
var genWatchEventSchemas = sync.OnceValues(func() (map[string]*openapi3.Schema, error) { return genEventSchemas("/v1/watch") })

// genEventSchemas are the schemas of a stream's event data by event name:
// the GET operation's x-events at path, resolved in the loaded spec.
func genEventSchemas(path string) (map[string]*openapi3.Schema, error) {
	raw, err := loadRawSpec()
	if err != nil {
		return nil, err
	}
	s, err := newSpec(raw)
	if err != nil {
		return nil, err
	}
	mt := s.doc.Paths.Find(path).Get.Responses.Status(http.StatusOK).Value.Content.Get("text/event-stream")
	events, _ := mt.Extensions["x-events"].(map[string]any)
	out := map[string]*openapi3.Schema{}
	for name, v := range events {
		ref, _ := v.(map[string]any)["$ref"].(string)
		sr := s.doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
		if sr == nil {
			return nil, fmt.Errorf("x-events %s: no schema %q", name, ref)
		}
		out[name] = sr.Value
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the 200 text/event-stream of %s has no x-events", path)
	}
	return out, nil
}

// genCheckEventData checks an event of GET /v1/watch against its schema.
func genCheckEventData(t *testing.T, ev testutil.SSEEvent) {
	t.Helper()
	schemas, err := genWatchEventSchemas()
	if err != nil {
		t.Fatal(err)
	}
	genCheckEventDataOf(t, schemas, ev)
}

// genCheckEventDataOf checks an event's data against its schema in schemas.
func genCheckEventDataOf(t *testing.T, schemas map[string]*openapi3.Schema, ev testutil.SSEEvent) {
	t.Helper()
	schema := schemas[ev.Event]
	if schema == nil {
		t.Fatalf("event %q: the spec's x-events does not name it", ev.Event)
	}
	var v any
	if err := json.Unmarshal([]byte(ev.Data), &v); err != nil {
		t.Fatalf("event %s data %q: %v", ev.Event, ev.Data, err)
	}
	if err := schema.VisitJSON(v); err != nil {
		t.Fatalf("event %s data %s does not match the spec: %v", ev.Event, ev.Data, err)
	}
}

// genNextChange skips progress events and returns the next change, each
// event's data checked against the spec.
func genNextChange(t *testing.T, events <-chan testutil.SSEEvent) (testutil.SSEEvent, client.WatchEvent) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			genCheckEventData(t, ev)
			if ev.Event == "progress" {
				continue
			}
			if ev.Event != "change" {
				t.Fatalf("event %q: %s", ev.Event, ev.Data)
			}
			var ch client.WatchEvent
			if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil {
				t.Fatalf("change %s: %v", ev.Data, err)
			}
			return ev, ch
		case <-deadline:
			t.Fatal("no change event")
		}
	}
}

// genKinds lists a change event's kind/resource pairs.
func genKinds(ch client.WatchEvent) string {
	var out []string
	for _, c := range ch.Changes {
		out = append(out, string(c.Kind)+" "+string(c.Resource))
	}
	return strings.Join(out, ", ")
}

// genWatch follows one channel through the generated client on a real
// node: its creation, a subscriber list change (with the channel's
// counters, in the same event: one command), its deletion (the row and a
// clear of its list, together); then resumes from the first event's id and
// gets the same events after it again, nothing repeated or missed.
func genWatch(t *testing.T, c *client.ClientWithResponses) {
	ctx := genCtx(t)
	const id = "watched-channel"
	params := &client.WatchParams{Resource: "channels,subscribers", ChannelType: ptr(3), ChannelId: ptr(id), Prev: ptr(true),
		ProgressIntervalMs: ptr(100)}
	events := genWatchOpen(t, c, params, "")
	select {
	case ev := <-events:
		if ev.Event != "progress" || ev.ID == "" {
			t.Fatalf("the first event: %+v, want progress with the starting cursor", ev)
		}
		genCheckEventData(t, ev)
	case <-time.After(30 * time.Second):
		t.Fatal("no first event")
	}
	created, err := c.CreateChannelWithResponse(ctx, nil, client.ChannelCreate{ChannelId: id, ChannelType: 3})
	genCheck(t, "create watched channel", created, err, http.StatusCreated)
	added, err := c.AddChannelSubscribersWithResponse(ctx, 3, id, nil, client.ChannelMembersRequest{Uids: []client.UID{"w1", "w2"}})
	genCheck(t, "add watched subscribers", added, err, http.StatusOK)
	gone, err := c.DeleteChannelWithResponse(ctx, 3, id, nil)
	genCheck(t, "delete watched channel", gone, err, http.StatusNoContent)

	want := []string{"put channels", "put subscribers, put subscribers, put channels", "delete channels, clear subscribers"}
	var ids []string
	var seqs []uint64
	for i, w := range want {
		ev, ch := genNextChange(t, events)
		if got := genKinds(ch); got != w {
			t.Fatalf("event %d: %s, want %s (%s)", i, got, w, ev.Data)
		}
		if ch.HashSlot != genHashSlot(id) {
			t.Fatalf("event %d in hash slot %d, want %d", i, ch.HashSlot, genHashSlot(id))
		}
		for _, x := range ch.Changes {
			if x.Key.ChannelId != id || x.Key.ChannelType != 3 {
				t.Fatalf("event %d: key %v", i, x.Key)
			}
		}
		ids, seqs = append(ids, ev.ID), append(seqs, ch.Seq)
		if i == 1 {
			if !strings.Contains(string(ch.Changes[2].Value), `"subscriber_count":2`) || !strings.Contains(string(ch.Changes[2].Prev), `"subscriber_count":0`) {
				t.Fatalf("the channel's counters: value %s, prev %s", ch.Changes[2].Value, ch.Changes[2].Prev)
			}
			if !strings.Contains(string(ch.Changes[0].Value), `"uid":"w1"`) {
				t.Fatalf("the subscriber's value: %s", ch.Changes[0].Value)
			}
		}
	}
	if !(seqs[0] < seqs[1] && seqs[1] < seqs[2]) {
		t.Fatalf("sequences %v do not rise", seqs)
	}
	// Resume after the first event: the other two again, the same.
	again := genWatchOpen(t, c, params, ids[0])
	for i := 1; i < len(want); i++ {
		ev, ch := genNextChange(t, again)
		if genKinds(ch) != want[i] || ev.ID != ids[i] || ch.Seq != seqs[i] {
			t.Fatalf("resumed event %d: %s id %s seq %d, want %s id %s seq %d", i, genKinds(ch), ev.ID, ch.Seq, want[i], ids[i], seqs[i])
		}
	}

	// List, then watch: the listing's position (X-Watch-Cursor) misses
	// nothing that came after the listing.
	created, err = c.CreateChannelWithResponse(ctx, nil, client.ChannelCreate{ChannelId: id, ChannelType: 3})
	genCheck(t, "create the watched channel again", created, err, http.StatusCreated)
	added, err = c.AddChannelSubscribersWithResponse(ctx, 3, id, nil, client.ChannelMembersRequest{Uids: []client.UID{"w1"}})
	genCheck(t, "add w1", added, err, http.StatusOK)
	list, err := c.ListChannelSubscribersWithResponse(ctx, 3, id, nil)
	genCheck(t, "list the watched subscribers", list, err, http.StatusOK)
	from := list.HTTPResponse.Header.Get("X-Watch-Cursor")
	if from == "" || len(list.JSON200.Items) != 1 {
		t.Fatalf("the listing: %+v, watch cursor %q", list.JSON200, from)
	}
	added, err = c.AddChannelSubscribersWithResponse(ctx, 3, id, nil, client.ChannelMembersRequest{Uids: []client.UID{"w3"}})
	genCheck(t, "add w3", added, err, http.StatusOK)
	after := genWatchOpen(t, c, &client.WatchParams{Resource: "subscribers", ChannelType: ptr(3), ChannelId: ptr(id)}, from)
	if _, ch := genNextChange(t, after); genKinds(ch) != "put subscribers" || !strings.Contains(string(ch.Changes[0].Value), `"uid":"w3"`) {
		t.Fatalf("the first change after the listing: %+v", ch)
	}
}
