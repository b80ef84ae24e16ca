package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// seen collects what Follow hands on.
type seen struct {
	mu     sync.Mutex
	values map[string][]string
	last   string
}

func (s *seen) handle(ev client.FollowEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range ev.Changes {
		var kv client.KV
		if err := json.Unmarshal(c.Value, &kv); err != nil {
			return err
		}
		s.values[c.Key.Key] = append(s.values[c.Key.Key], kv.Value)
	}
	s.last = ev.Cursor
	return nil
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.values {
		n += len(v)
	}
	return n
}

// TestFollowResumesOnAnotherNode: Follow hands on every change once, in
// order, across the stop of the node it followed on (it resumes on the
// next server from its last position); a position out of retention ends
// it with a compacted WatchError; a handler's error ends it as it is.
func TestFollowResumesOnAnotherNode(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Tune: func(cfg *cluster.Config) { cfg.WatchRecords = 20 }})
	urls := make([]string, 3)
	for i, n := range c.Nodes {
		urls[i] = slotstoretest.ServeAPI(t, n).URL
	}
	writer, err := client.NewClientWithResponses(urls[1])
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"f-a", "f-b", "f-c"}
	written := map[string][]string{}
	write := func(n int) {
		t.Helper()
		for i := range n {
			k := keys[i%len(keys)]
			v := fmt.Sprint("v", len(written[k]))
			testutil.WaitUntil(t, 10*time.Second, 10*time.Millisecond, "a write", func() bool {
				r, err := writer.PutKVWithResponse(context.Background(), k, nil, client.KVWrite{Value: v})
				return err == nil && r.StatusCode() == http.StatusOK
			})
			written[k] = append(written[k], v)
		}
	}
	follower, err := client.NewClient(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	got := &seen{values: map[string][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := make(chan string, 1)
	go func() {
		done <- follower.Follow(ctx, &client.WatchParams{Resource: "kv", Prefix: ptr("f-")},
			client.FollowOptions{Servers: urls[1:], MaxBackoff: 200 * time.Millisecond, Progress: func(cur string) {
				select {
				case started <- cur:
				default:
				}
			}}, got.handle)
	}()
	<-started
	write(9)
	testutil.WaitUntil(t, 30*time.Second, 10*time.Millisecond, "nine changes", func() bool { return got.count() == 9 })
	c.StopNode(0)
	write(9)
	testutil.WaitUntil(t, 30*time.Second, 10*time.Millisecond, "eighteen changes", func() bool { return got.count() == 18 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow ended with %v", err)
	}
	for _, k := range keys {
		if fmt.Sprint(got.values[k]) != fmt.Sprint(written[k]) {
			t.Fatalf("%s: followed %v, written %v", k, got.values[k], written[k])
		}
	}

	// The first position is gone once its slot took more than 20 changes since.
	old := got.last
	for range 25 {
		write(1) // f-a only
	}
	var we *client.WatchError
	fresh, _ := client.NewClient(urls[1])
	err = fresh.Follow(context.Background(), &client.WatchParams{Resource: "kv", Prefix: ptr("f-")},
		client.FollowOptions{From: old}, func(client.FollowEvent) error { return nil })
	if !errors.As(err, &we) || we.Code != client.ErrorCodeCompacted || we.Status != http.StatusGone {
		t.Fatalf("following a compacted position: %v", err)
	}
	// A handler's error ends Follow as it is.
	stop := errors.New("enough")
	ended := make(chan error, 1)
	began := make(chan struct{})
	go func() {
		ended <- fresh.Follow(context.Background(), &client.WatchParams{Resource: "kv", Key: ptr("f-a")},
			client.FollowOptions{Progress: func(string) {
				select {
				case <-began:
				default:
					close(began)
				}
			}}, func(client.FollowEvent) error { return stop })
	}()
	<-began
	write(1)
	if err := <-ended; !errors.Is(err, stop) {
		t.Fatalf("Follow after its handler failed: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
