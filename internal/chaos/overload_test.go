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

	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestOverloadSheds: far more concurrent writers than a small proposal
// queue holds. The node sheds the excess with 429 queue_full and Retry-After
// (never a 500, never a hang), goroutines return to where they were, and it
// serves normally again afterwards without a restart.
func TestOverloadSheds(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 1,
		Proposer: propose.Config{QueueSize: 4, MaxInFlight: 1, MaxBatchCommands: 2}})
	ts := slotstoretest.ServeAPI(t, c.Nodes[0])
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	put := func(key string) (int, string) {
		req, _ := http.NewRequest("PUT", ts.URL+"/v1/kv/"+key, strings.NewReader(`{"value":"v"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	put("warm-up")
	baseline := runtime.NumGoroutine()

	var ok, shed, other atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(1500 * time.Millisecond)
	for w := 0; w < 96; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				code, retryAfter := put(fmt.Sprintf("load-%d-%d", w, i))
				switch {
				case code == 200:
					ok.Add(1)
				case code == 429 && retryAfter != "":
					shed.Add(1)
				default:
					other.Add(1)
					t.Errorf("under overload: %d (Retry-After %q)", code, retryAfter)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("under overload: %d written, %d shed with 429, %d other", ok.Load(), shed.Load(), other.Load())
	if shed.Load() == 0 || ok.Load() == 0 {
		t.Fatalf("expected both progress and shedding: %d written, %d shed", ok.Load(), shed.Load())
	}
	// Recovery: plain writes go through again.
	for i := 0; i < 20; i++ {
		if code, _ := put(fmt.Sprintf("after-%d", i)); code != 200 {
			t.Fatalf("after the overload: %d", code)
		}
	}
	client.CloseIdleConnections()
	ts.CloseClientConnections()
	// Nothing grew without bound: the goroutines of the storm are gone.
	testutil.WaitFor(t, 5*time.Second, 20*time.Millisecond, func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= baseline+20, fmt.Sprintf("%d goroutines after the overload, %d before", n, baseline)
	})
}
