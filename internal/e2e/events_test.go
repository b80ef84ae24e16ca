package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func eventBody(id string) string {
	return fmt.Sprintf(`{"client_msg_no":"m-1","event_key":"stream","event_id":%q,"event_type":"stream.delta","status":"open","payload":{"id":%q}}`, id, id)
}

// post sends a JSON POST from any goroutine and returns its status.
func (s *server) post(path, body string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.url+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 {
		return resp.StatusCode, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return resp.StatusCode, nil
}

func TestEventsEndToEnd(t *testing.T) {
	s := oneNode(t)
	const base = "/v1/channels/2/stream-room/events"
	r := s.must(201, "POST", base, eventBody("e-1"))
	routeHeaders(t, "append event", r)
	var ev client.ChannelEvent
	r.json(&ev)
	if ev.Seq != 1 || ev.EventId != "e-1" || ev.EventType != "stream.delta" || ev.Status != "open" || fmt.Sprint(deref(ev.Payload)) != "map[id:e-1]" {
		t.Fatalf("appended %s", r.body)
	}
	// A retry with an Idempotency-Key answers the first append again, without a second event.
	first := s.must(201, "POST", base, eventBody("e-2"), "Idempotency-Key", "ev-2")
	again := s.must(201, "POST", base, eventBody("e-2"), "Idempotency-Key", "ev-2")
	if !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay:\n%s\n%s", first.body, again.body)
	}
	r = s.must(201, "POST", base, `{"client_msg_no":"m-2","event_key":"k","event_id":"e-3","event_type":"t"}`)
	r.json(&ev)
	if ev.Seq != 3 || ev.Payload != nil || ev.Status != "" {
		t.Fatalf("no payload %s", r.body)
	}
	for i := 4; i <= 5; i++ {
		s.must(201, "POST", base, eventBody(fmt.Sprintf("e-%d", i)))
	}
	idKey := func(it map[string]any) string { return fmt.Sprint(it["event_id"]) }
	for _, limit := range []int{1, 2, 1000} {
		onceInOrder(t, fmt.Sprintf("limit %d", limit), s.walk(base, limit, idKey), []string{"e-5", "e-4", "e-3", "e-2", "e-1"})
	}
	onceInOrder(t, "another type of the same id", s.walk("/v1/channels/3/stream-room/events", 2, idKey), nil)

	for _, body := range []string{
		`{"client_msg_no":"m","event_key":"k","event_type":"t"}`,
		`{"client_msg_no":"m","event_key":"k","event_id":"","event_type":"t"}`,
		`{"client_msg_no":"m","event_key":"k","event_id":"i","event_type":"t","payload":{"x":"` + strings.Repeat("p", 17<<10) + `"}}`,
		`{"client_msg_no":"m","event_key":"k","event_id":"` + strings.Repeat("i", 129) + `","event_type":"t"}`,
		`{"client_msg_no":"m","event_key":"k","event_id":"i","event_type":"t","extra":1}`,
	} {
		if r := s.do("POST", base, body); r.code != 400 {
			t.Errorf("append %.80s: %d %s", body, r.code, r.body)
		}
	}
}

// TestEventProjectionKeepsTheNewest appends DefaultEventCapacity+3 events:
// exactly DefaultEventCapacity remain, the three oldest are gone, and the
// listing is newest first.
func TestEventProjectionKeepsTheNewest(t *testing.T) {
	s := oneNode(t)
	const base = "/v1/channels/1/busy/events"
	const n = meta.DefaultEventCapacity
	for i := 1; i <= 3; i++ {
		s.must(201, "POST", base, eventBody(fmt.Sprintf("old-%d", i)))
	}
	// The rest concurrently (their seqs follow the order the leader applied them).
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if _, err := s.post(base, eventBody(fmt.Sprintf("new-%d", i))); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d appends failed, first: %v", len(errs), errs[0])
	}

	var page client.ChannelEventPage
	s.must(200, "GET", base+"?limit=1000", "").json(&page)
	if len(page.Items) != n || deref(page.NextCursor) != "" || page.Count != n || page.LastSeq != n+3 {
		t.Fatalf("%d items, cursor %q, count %d, last_seq %d", len(page.Items), deref(page.NextCursor), page.Count, page.LastSeq)
	}
	seen := map[string]bool{}
	for i, ev := range page.Items {
		if want := int64(n + 3 - i); ev.Seq != want {
			t.Fatalf("item %d has seq %d, want %d (newest first)", i, ev.Seq, want)
		}
		if strings.HasPrefix(ev.EventId, "old-") || seen[ev.EventId] {
			t.Fatalf("item %d is %s", i, ev.EventId)
		}
		seen[ev.EventId] = true
	}
	// One more append trims one more.
	s.must(201, "POST", base, eventBody("last"))
	s.must(200, "GET", base+"?limit=1000", "").json(&page)
	if len(page.Items) != n || page.Items[0].EventId != "last" || page.Items[n-1].Seq != 5 || page.Count != n {
		t.Fatalf("after one more: %d items, newest %s, oldest seq %d", len(page.Items), page.Items[0].EventId, page.Items[n-1].Seq)
	}
	// Paging walks the same events.
	idKey := func(it map[string]any) string { return fmt.Sprint(it["seq"]) }
	if keys := s.walk(base, 7, idKey); len(keys) != n || keys[0] != fmt.Sprint(n+4) || keys[n-1] != "5" {
		t.Fatalf("walk of %d: first %s, last %s", len(keys), keys[0], keys[len(keys)-1])
	}
}
