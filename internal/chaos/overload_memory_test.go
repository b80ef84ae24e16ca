package chaos

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// Bounds of TestOverloadMemory. The heap is HeapInuse: during the storm it
// is sampled without forcing a collection, so the bound leaves room for the
// garbage of a few thousand requests between two cycles; afterwards it is
// measured after runtime.GC.
const (
	stormFactor     = 4
	stormLength     = 2 * time.Second
	stormInFlight   = 512       // the client's own bound on open requests
	stormHeapGrowth = 128 << 20 // peak HeapInuse at most baseline + this
	settleHeapSlack = 24 << 20  // after the storm: back to baseline × 1.25 + this
)

// TestOverloadMemory drives about four times the write load one node
// sustains, open-loop, for two seconds. Requests the node cannot take must
// be shed at once with 429 or 503 and Retry-After (nothing else); the heap
// stays under a bound during the storm and returns near its baseline after
// it, and so do the goroutines.
func TestOverloadMemory(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 1,
		Proposer: propose.Config{QueueSize: 64, MaxInFlight: 1, MaxBatchCommands: 1},
		Tune:     func(cfg *cluster.Config) { cfg.ProjectInterval = -1 }})
	ts := slotstoretest.ServeAPI(t, c.Nodes[0])
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: stormInFlight}}
	var ok, shed atomic.Int64
	var badMu sync.Mutex
	var bad []string
	put := func(key string) {
		req, _ := http.NewRequest("PUT", ts.URL+"/v1/kv/"+key, strings.NewReader(`{"value":"v"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			badMu.Lock()
			bad = append(bad, err.Error())
			badMu.Unlock()
			return
		}
		resp.Body.Close()
		switch code := resp.StatusCode; {
		case code == 200:
			ok.Add(1)
		case (code == 429 || code == 503) && resp.Header.Get("Retry-After") != "":
			shed.Add(1)
		default:
			badMu.Lock()
			bad = append(bad, fmt.Sprintf("%d (Retry-After %q)", code, resp.Header.Get("Retry-After")))
			badMu.Unlock()
		}
	}

	// Warm up, then the baseline.
	closedLoop(8, 300*time.Millisecond, put)
	baseHeap, baseG := settledHeap(), runtime.NumGoroutine()

	// What the node sustains: a closed loop of writers that keeps it busy
	// without filling its queue.
	ok.Store(0)
	calib := closedLoop(16, time.Second, put)
	rate := float64(ok.Load()) / calib.Seconds()
	if ok.Load() == 0 || len(bad) > 0 {
		t.Fatalf("calibration: %d written, %d shed, %v", ok.Load(), shed.Load(), bad)
	}

	// The storm: stormFactor × rate, open loop, sampled every 50 ms.
	ok.Store(0)
	shed.Store(0)
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak.Store(max(peak.Load(), ms.HeapInuse))
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	sent, saturated := openLoop(stormFactor*rate, stormLength, put)
	close(stopSampling)
	<-sampled
	t.Logf("sustained %.0f writes/s; storm at %d× for %v: %d sent (%.0f/s), %d written, %d shed, %d dropped by the client (%d open)",
		rate, stormFactor, stormLength, sent, float64(sent)/stormLength.Seconds(), ok.Load(), shed.Load(), saturated, stormInFlight)
	t.Logf("heap in use: baseline %d MiB, storm peak %d MiB", baseHeap>>20, peak.Load()>>20)
	if len(bad) > 0 {
		t.Errorf("%d answers other than 200 or 429/503 with Retry-After, e.g. %v", len(bad), bad[:min(len(bad), 5)])
	}
	if shed.Load() == 0 {
		t.Errorf("nothing was shed at %d× the sustained load", stormFactor)
	}
	if peak.Load() > baseHeap+stormHeapGrowth {
		t.Errorf("heap in use peaked at %d MiB during the storm, baseline %d MiB (bound +%d MiB)", peak.Load()>>20, baseHeap>>20, stormHeapGrowth>>20)
	}

	// After the storm: heap and goroutines return.
	client.CloseIdleConnections()
	ts.CloseClientConnections()
	limit := baseHeap + baseHeap/4 + settleHeapSlack
	var after uint64
	testutil.WaitFor(t, 10*time.Second, 100*time.Millisecond, func() (bool, string) {
		after = settledHeap()
		g := runtime.NumGoroutine()
		return after <= limit && g <= baseG+20, fmt.Sprintf("after the storm: heap in use %d MiB (baseline %d, limit %d), %d goroutines (%d before)",
			after>>20, baseHeap>>20, limit>>20, g, baseG)
	})
	t.Logf("heap in use after the storm: %d MiB; goroutines %d (baseline %d)", after>>20, runtime.NumGoroutine(), baseG)
}

// settledHeap is HeapInuse right after a collection.
func settledHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// closedLoop runs n writers back to back for d and returns how long they ran.
func closedLoop(n int, d time.Duration, put func(string)) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Since(start) < d; i++ {
				put(fmt.Sprintf("calib-%d-%d", w, i))
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// openLoop starts writes at rate per second for d, whatever the answers,
// each on its own goroutine, at most stormInFlight open at once (a write
// due while that many are open is dropped and counted as saturated). It
// waits for every write to finish.
func openLoop(rate float64, d time.Duration, put func(string)) (sent, saturated int) {
	slots := make(chan struct{}, stormInFlight)
	var wg sync.WaitGroup
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for now := start; now.Sub(start) < d; now = <-tick.C {
		for due := int(rate * now.Sub(start).Seconds()); sent+saturated < due; {
			select {
			case slots <- struct{}{}:
			default:
				saturated++
				continue
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				put(fmt.Sprintf("storm-%d", i))
				<-slots
			}(sent)
			sent++
		}
	}
	wg.Wait()
	return sent, saturated
}
