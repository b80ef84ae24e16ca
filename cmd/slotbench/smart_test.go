package main

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestSmartClientRunsEveryKeyedWorkload: with -client smart, kv-put,
// get-linearizable, batch-get and batch-put run through the route-aware
// client against three real nodes served where they advertise, without an
// error, every batch item found or applied.
func TestSmartClientRunsEveryKeyedWorkload(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 4})
	var eps []string
	for _, s := range c.ServeAPIs() {
		eps = append(eps, s.URL)
	}
	for _, w := range []string{"kv-put", "get-linearizable", "batch-get", "batch-put"} {
		res, err := Run(context.Background(), Config{Target: "slotmeta", Client: "smart", Endpoints: eps, Workload: w,
			Concurrency: 4, Duration: 400 * time.Millisecond, Timeout: 5 * time.Second, ValueSize: 10,
			Keys: 64, KeyPrefix: "sm", Preload: w == "get-linearizable", PreloadConc: 4, Channels: 1, UIDsPerCall: 1, Batch: 20}, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if res.OK == 0 || res.Errors != 0 || res.Client != "smart" {
			t.Fatalf("%s: %d ok, %d errors %v %v", w, res.OK, res.Errors, res.ErrorsBy, res.ErrSamples)
		}
	}
	if _, err := Run(context.Background(), Config{Target: "etcd", Client: "smart", Endpoints: eps, Workload: "kv-put",
		Concurrency: 1, Duration: time.Millisecond, Timeout: time.Second, ValueSize: 10, Keys: 1, PreloadConc: 1, Channels: 1, UIDsPerCall: 1}, io.Discard); err == nil {
		t.Fatal("-client smart against etcd was accepted")
	}
}

// TestNoopServerAnswersKVPut: the no-op yardstick answers kv-put as the
// API would (200, the key and value back), so the workload runs on it
// without an error.
func TestNoopServerAnswersKVPut(t *testing.T) {
	ts := httptest.NewServer(noopHandler())
	defer ts.Close()
	res, err := Run(context.Background(), Config{Target: "slotmeta", Endpoints: []string{ts.URL}, Workload: "kv-put",
		Concurrency: 2, Duration: 200 * time.Millisecond, Timeout: 5 * time.Second, ValueSize: 10,
		Keys: 1, PreloadConc: 1, Channels: 1, UIDsPerCall: 1}, io.Discard)
	if err != nil || res.OK == 0 || res.Errors != 0 {
		t.Fatalf("%v: %+v", err, res)
	}
}
