// Package chaos runs real in-process clusters under concurrent clients while
// faults are injected (leader transfers, node restarts), records every
// client operation and checks the history with porcupine: the business-key
// register must be linearizable, so no acknowledged write is lost and no
// read sees a value that was overwritten or never written.
//
// `make test` runs a few fixed seeds (TestShortChaos); CHAOS_SEEDS=N runs N
// random schedules (make chaos).
package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/prometheus/client_golang/prometheus"

	"slotmeta/internal/httpapi"
	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/slotstoretest"
)

type kvInput struct {
	Put   bool
	Key   string
	Value string
}

type kvOutput struct {
	Value   string // get: the value read ("" when absent)
	Unknown bool   // put: no definite answer; it may or may not have applied
}

// registerModel: one register per key (partitioned). A put whose outcome is
// unknown may or may not have taken effect: both states follow.
var registerModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(kvInput).Key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		in, out := input.(kvInput), output.(kvOutput)
		switch {
		case in.Put && out.Unknown:
			return []any{state, in.Value}
		case in.Put:
			return []any{in.Value}
		case out.Value == state.(string):
			return []any{state}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		if in.Put {
			return fmt.Sprintf("put(%s,%s) unknown=%v", in.Key, in.Value, out.Unknown)
		}
		return fmt.Sprintf("get(%s) -> %q", in.Key, out.Value)
	},
}

type recorder struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) add(op porcupine.Operation) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

type stats struct {
	mu                          sync.Mutex
	acked, unknown, reads, gets int
	faults                      []string
}

func TestShortChaos(t *testing.T) {
	seeds := []int64{1, 2, 3}
	if n, _ := strconv.Atoi(os.Getenv("CHAOS_SEEDS")); n > 0 {
		seeds = nil
		base := time.Now().UnixNano()
		for i := 0; i < n; i++ {
			seeds = append(seeds, base+int64(i))
		}
	}
	dur := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv("CHAOS_DURATION")); err == nil {
		dur = d
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runSchedule(t, seed, dur) })
	}
}

func runSchedule(t *testing.T, seed int64, dur time.Duration) {
	rng := rand.New(rand.NewSource(seed))
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2})
	urls := make([]string, 3)
	var urlMu sync.RWMutex
	serve := func(i int) {
		reg := prometheus.NewRegistry()
		h, err := httpapi.New(httpapi.Config{Backend: c.Nodes[i], Registerer: reg, Gatherer: reg})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		urlMu.Lock()
		urls[i] = ts.URL
		urlMu.Unlock()
	}
	for i := range c.Nodes {
		serve(i)
	}
	keys := []string{"alpha", "bravo", "charlie", "delta"}
	rec := &recorder{start: time.Now()}
	st := &stats{}
	client := &http.Client{Timeout: 3 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()

	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		wrng := rand.New(rand.NewSource(seed*31 + int64(w)))
		go func() {
			defer wg.Done()
			for seq := 0; ctx.Err() == nil; seq++ {
				urlMu.RLock()
				base := urls[wrng.Intn(len(urls))]
				urlMu.RUnlock()
				key := keys[wrng.Intn(len(keys))]
				if wrng.Intn(10) < 6 {
					val := fmt.Sprintf("w%d-%d", w, seq)
					call := rec.now()
					code := do(client, "PUT", base+"/v1/kv/"+key, `{"value":"`+val+`"}`, nil)
					ret := rec.now()
					out := kvOutput{}
					if code != 200 {
						out.Unknown, ret = true, math.MaxInt64
					}
					rec.add(porcupine.Operation{ClientId: w, Input: kvInput{Put: true, Key: key, Value: val}, Call: call, Output: out, Return: ret})
					st.mu.Lock()
					if code == 200 {
						st.acked++
					} else {
						st.unknown++
					}
					st.mu.Unlock()
				} else {
					var body struct{ Value string }
					call := rec.now()
					code := do(client, "GET", base+"/v1/kv/"+key, "", &body)
					ret := rec.now()
					st.mu.Lock()
					st.gets++
					st.mu.Unlock()
					if code != 200 && code != 404 {
						continue // a failed read has no effect
					}
					rec.add(porcupine.Operation{ClientId: w, Input: kvInput{Key: key}, Call: call, Output: kvOutput{Value: body.Value}, Return: ret})
					st.mu.Lock()
					st.reads++
					st.mu.Unlock()
				}
			}
		}()
	}

	// The fault schedule: leader transfers and node restarts, seeded.
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(150+rng.Intn(250)) * time.Millisecond):
		}
		if ctx.Err() != nil {
			break
		}
		switch rng.Intn(3) {
		case 0, 1:
			g := slotstore.GroupID(rng.Intn(2) + 1)
			target := slotstore.NodeID(rng.Intn(3) + 1)
			tctx, tcancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := c.Nodes[0].TransferLeader(tctx, g, target)
			tcancel()
			st.faults = append(st.faults, fmt.Sprintf("transfer g%d→n%d (%v)", g, target, err == nil))
		case 2:
			i := rng.Intn(3)
			c.Restart(i)
			serve(i)
			st.faults = append(st.faults, fmt.Sprintf("restart n%d", i+1))
		}
	}
	wg.Wait()
	c.WaitReady()
	// Final reads through every node close the history.
	for _, key := range keys {
		for i := range urls {
			var body struct{ Value string }
			deadline := time.Now().Add(10 * time.Second)
			for {
				call := rec.now()
				code := do(client, "GET", urls[i]+"/v1/kv/"+key, "", &body)
				if code == 200 || code == 404 {
					rec.add(porcupine.Operation{ClientId: 9, Input: kvInput{Key: key}, Call: call, Output: kvOutput{Value: body.Value}, Return: rec.now()})
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("final read of %s through node %d: %d", key, i+1, code)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel.ToModel(), rec.ops, 60*time.Second)
	t.Logf("seed %d: %d acknowledged writes, %d unknown, %d reads (%d attempted), faults: %s",
		seed, st.acked, st.unknown, st.reads, st.gets, strings.Join(st.faults, ", "))
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		f, _ := os.CreateTemp("", "slotmeta-chaos-*.html")
		if f != nil {
			_ = porcupine.Visualize(registerModel.ToModel(), info, f)
			f.Close()
			t.Logf("visualization: %s", f.Name())
		}
		t.Fatalf("seed %d: the history is NOT linearizable", seed)
	default:
		t.Fatalf("seed %d: the checker timed out", seed)
	}
	if st.acked == 0 || st.reads == 0 {
		t.Fatalf("seed %d: the schedule did no work (%d writes, %d reads)", seed, st.acked, st.reads)
	}
}

func do(c *http.Client, method, url, body string, out any) int {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		_ = json.Unmarshal(b, out)
	}
	return resp.StatusCode
}
