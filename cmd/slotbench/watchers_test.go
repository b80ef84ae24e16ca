package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestWatchersSeeTheWatchedWrites: beside kv-put-watched, -watchers
// streams are delivered the writes (one each: every key has its watcher)
// and report their delay; none ends early.
func TestWatchersSeeTheWatchedWrites(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 2})
	url := slotstoretest.ServeAPI(t, c.Nodes[0]).URL
	res, err := Run(context.Background(), Config{Target: "slotmeta", Endpoints: []string{url}, Workload: "kv-put-watched",
		Concurrency: 2, Duration: time.Second, Warmup: 200 * time.Millisecond, Timeout: 5 * time.Second, ValueSize: 10,
		Keys: 8, Watchers: 8, PreloadConc: 1, Channels: 1, UIDsPerCall: 1}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	w := res.Watch
	if w == nil || w.Watchers != 8 || len(w.Ended) != 0 {
		t.Fatalf("watch stats %+v", w)
	}
	// Deliveries and writes are counted from the same instant; a few at
	// the window's edges may fall on either side.
	if res.OK == 0 || w.Delivered+10 < res.OK || w.Delivered > res.OK+10 {
		t.Fatalf("%d writes, %d delivered", res.OK, w.Delivered)
	}
	if w.Delay.P50 <= 0 || w.Delay.Max < w.Delay.P50 {
		t.Fatalf("delay %+v", w.Delay)
	}
}

// TestBatchGetReadsEveryKey: the batch-get workload reads preloaded keys
// -batch at a time from a real node, every key found, and batch-put writes
// new keys -batch at a time, every one applied; both report keys/s.
func TestBatchGetReadsEveryKey(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 4})
	url := slotstoretest.ServeAPI(t, c.Nodes[0]).URL
	res, err := Run(context.Background(), Config{Target: "slotmeta", Endpoints: []string{url}, Workload: "batch-get",
		Concurrency: 2, Duration: 500 * time.Millisecond, Timeout: 5 * time.Second, ValueSize: 10,
		Keys: 64, KeyPrefix: "bg", Preload: true, PreloadConc: 4, Channels: 1, UIDsPerCall: 1, Batch: 20}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK == 0 || res.Errors != 0 || res.KeysPerSec != res.OpsPerSec*20 {
		t.Fatalf("%d ok, %d errors %v, %.0f keys/s at %.0f requests/s", res.OK, res.Errors, res.ErrorsBy, res.KeysPerSec, res.OpsPerSec)
	}
	res, err = Run(context.Background(), Config{Target: "slotmeta", Endpoints: []string{url}, Workload: "batch-put",
		Concurrency: 2, Duration: 500 * time.Millisecond, Timeout: 5 * time.Second, ValueSize: 10,
		Keys: 1, PreloadConc: 1, Channels: 1, UIDsPerCall: 1, Batch: 20}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK == 0 || res.Errors != 0 || res.KeysPerSec != res.OpsPerSec*20 {
		t.Fatalf("batch-put: %d ok, %d errors %v", res.OK, res.Errors, res.ErrorsBy)
	}
}
