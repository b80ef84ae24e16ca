package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// countingDoer counts the streams it opens.
type countingDoer struct {
	hc      *http.Client
	streams atomic.Int64
}

func (d *countingDoer) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/v1/watch/stream") {
		d.streams.Add(1)
	}
	return d.hc.Do(req)
}

// TestWatcherCarriesManyFollows: thirty follows — one key each, and a
// prefix — ride one stream; each hands on exactly its key's changes, once
// and in order, across the stop of the node the stream was on (the
// Watcher opens one on the next server and adds every watch again from
// its position); a follow whose position left retention ends with a
// compacted WatchError and the others go on; Close ends the rest.
func TestWatcherCarriesManyFollows(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Tune: func(cfg *cluster.Config) { cfg.WatchRecords = 40 }})
	urls := make([]string, 3)
	for i, n := range c.Nodes {
		urls[i] = slotstoretest.ServeAPI(t, n).URL
	}
	writer, err := client.NewClientWithResponses(urls[1])
	if err != nil {
		t.Fatal(err)
	}
	const keys = 30
	key := func(i int) string { return fmt.Sprintf("w-%02d", i) }
	var wmu sync.Mutex
	written := map[string][]string{}
	write := func(k string) {
		t.Helper()
		wmu.Lock()
		v := fmt.Sprint("v", len(written[k]))
		wmu.Unlock()
		testutil.WaitUntil(t, 10*time.Second, 10*time.Millisecond, "a write", func() bool {
			r, err := writer.PutKVWithResponse(context.Background(), k, nil, client.KVWrite{Value: v})
			return err == nil && r.StatusCode() == http.StatusOK
		})
		wmu.Lock()
		written[k] = append(written[k], v)
		wmu.Unlock()
	}

	doer := &countingDoer{hc: &http.Client{}}
	follower, err := client.NewClient(urls[0], client.WithHTTPClient(doer))
	if err != nil {
		t.Fatal(err)
	}
	w := client.NewWatcher(follower, client.WatcherOptions{Servers: urls[1:], MaxBackoff: 200 * time.Millisecond})
	defer w.Close()
	got := make([]*seen, keys+1)
	done := make([]chan error, keys+1)
	var started sync.WaitGroup
	for i := range got {
		got[i], done[i] = &seen{values: map[string][]string{}}, make(chan error, 1)
		params := &client.WatchParams{Resource: "kv", Key: ptr(key(i))}
		if i == keys {
			params = &client.WatchParams{Resource: "kv", Prefix: ptr("w-")}
		}
		started.Add(1)
		var once sync.Once
		go func() {
			done[i] <- follower.Follow(context.Background(), params, client.FollowOptions{Watcher: w,
				Progress: func(string) { once.Do(started.Done) }}, got[i].handle)
		}()
	}
	started.Wait()
	total := func() int {
		n := 0
		for _, s := range got[:keys] {
			n += s.count()
		}
		return n
	}
	for i := range 3 * keys {
		write(key(i % keys))
	}
	testutil.WaitUntil(t, 30*time.Second, 10*time.Millisecond, "every change", func() bool { return total() == 3*keys && got[keys].count() == 3*keys })
	c.StopNode(0)
	for i := range 3 * keys {
		write(key(i % keys))
	}
	testutil.WaitUntil(t, 30*time.Second, 10*time.Millisecond, "every change after the stop", func() bool {
		return total() == 6*keys && got[keys].count() == 6*keys
	})
	for i := range keys {
		k := key(i)
		if fmt.Sprint(got[i].values[k]) != fmt.Sprint(written[k]) || len(got[i].values) != 1 {
			t.Fatalf("follow of %s: %v, written %v", k, got[i].values, written[k])
		}
		if fmt.Sprint(got[keys].values[k]) != fmt.Sprint(written[k]) {
			t.Fatalf("the prefix follow's %s: %v, written %v", k, got[keys].values[k], written[k])
		}
	}
	if n := doer.streams.Load(); n != 2 {
		t.Fatalf("%d streams opened for %d follows and one node stop, want 2", n, keys+1)
	}

	// A position out of retention ends its follow alone.
	got[0].mu.Lock()
	old := got[0].last
	got[0].mu.Unlock()
	for range 45 {
		write(key(0))
	}
	var we *client.WatchError
	err = follower.Follow(context.Background(), &client.WatchParams{Resource: "kv", Key: ptr(key(0))},
		client.FollowOptions{Watcher: w, From: old}, func(client.FollowEvent) error { return nil })
	if !errors.As(err, &we) || we.Code != client.ErrorCodeCompacted || we.Cursor != old {
		t.Fatalf("following a compacted position: %v", err)
	}
	write(key(1))
	testutil.WaitUntil(t, 30*time.Second, 10*time.Millisecond, "a change after the refusal", func() bool { return got[1].count() == 7 })

	// Two follows in one add, one of them refused as it is (a cursor that
	// is no cursor): the whole request is refused, the Watcher sends them
	// again one a request, and only the bad one ends.
	w2 := client.NewWatcher(follower, client.WatcherOptions{Servers: urls[2:]})
	defer w2.Close()
	badDone := make(chan error, 1)
	good := &seen{values: map[string][]string{}}
	goodStarted := make(chan struct{})
	var goodOnce sync.Once
	go func() {
		badDone <- follower.Follow(context.Background(), &client.WatchParams{Resource: "kv", Key: ptr(key(2))},
			client.FollowOptions{Watcher: w2, From: "!!"}, func(client.FollowEvent) error { return nil })
	}()
	go func() {
		_ = follower.Follow(context.Background(), &client.WatchParams{Resource: "kv", Key: ptr(key(3))},
			client.FollowOptions{Watcher: w2, Progress: func(string) { goodOnce.Do(func() { close(goodStarted) }) }}, good.handle)
	}()
	if err := <-badDone; !errors.As(err, &we) || we.Code != client.ErrorCodeInvalidArgument {
		t.Fatalf("the follow of a bad cursor: %v", err)
	}
	select {
	case <-goodStarted:
	case <-time.After(30 * time.Second):
		t.Fatal("the good follow beside a bad one never started")
	}
	write(key(3))
	testutil.WaitUntil(t, 30*time.Second, 10*time.Millisecond, "the good follow's change", func() bool { return good.count() == 1 })

	w.Close()
	for i := range done {
		if err := <-done[i]; !errors.Is(err, client.ErrWatcherClosed) {
			t.Fatalf("follow %d after Close: %v", i, err)
		}
	}
}
