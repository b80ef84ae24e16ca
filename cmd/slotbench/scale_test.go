//go:build slotbenchscale

// The scale-out benchmark (make scale, bench/scale.sh): slotmeta nodes as
// real processes, each on a network-namespace host of its own and capped at
// a fixed CPU share (a cgroup cpu quota), loaded by slotbench's own closed
// loop from this process (outside the caps). It measures 3 nodes, joins 3
// more and lets the balancer settle, measures 6, drains the 3 new ones back
// out (removing them), and measures again — each phase with the load spread
// evenly over the nodes and with the load sent where the routes say (writes
// to the leader, reads to a replica). A background writer keeps writing
// through the three nodes that stay during the whole run: at the end every
// write it got acknowledged must read back, and its longest write is the
// longest pause any move caused. The build tag keeps it out of go test ./...
//
//	SLOTBENCH_SCALE_BIN=bin/slotmeta go test -tags slotbenchscale -run TestScaleOut -v -timeout 60m ./cmd/slotbench
//
// SLOTBENCH_SCALE_CPU (cores per node, 0.25), SLOTBENCH_SCALE_C (64),
// SLOTBENCH_SCALE_DURATION (10s a measurement), SLOTBENCH_SCALE_OUT (the
// markdown table, default scale.md).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/nethost"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

func scaleEnv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// scaleRow is one measurement.
type scaleRow struct {
	phase, workload, mode string
	nodes                 int
	opsPerSec             float64
	p99ms                 float64
	errors                uint64
	capUsed               float64 // CPU the nodes used in the run over what their caps allow
}

// admin is a small client of the cluster's admin API.
type admin struct {
	t     *testing.T
	token string
	cl    *http.Client
}

func (a admin) do(method, url string, body []byte, out any) int {
	a.t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.cl.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			a.t.Fatalf("%s %s: %v: %.200s", method, url, err, b)
		}
	}
	return resp.StatusCode
}

// settled waits until the balancer has nothing to do, no task runs and the
// cluster has want groups, twice in a row.
func (a admin) settled(api string, want int, within time.Duration) time.Duration {
	a.t.Helper()
	start := time.Now()
	calm := 0
	testutil.WaitFor(a.t, within, 2*time.Second, func() (bool, string) {
		var plan struct {
			Actions []json.RawMessage `json:"actions"`
			Held    string            `json:"held"`
		}
		var tasks struct {
			Items []struct {
				Status string `json:"status"`
			} `json:"items"`
		}
		var groups struct {
			Items []struct {
				Leader uint64 `json:"leader"`
			} `json:"items"`
		}
		ok := a.do("GET", api+"/v1/cluster/balancer/plan", nil, &plan) == 200 &&
			a.do("GET", api+"/v1/cluster/tasks", nil, &tasks) == 200 &&
			a.do("GET", api+"/v1/cluster/groups", nil, &groups) == 200
		running := 0
		for _, tk := range tasks.Items {
			if tk.Status == "running" || tk.Status == "cancelling" {
				running++
			}
		}
		if ok && len(plan.Actions) == 0 && plan.Held == "" && running == 0 && len(groups.Items) == want {
			calm++
		} else {
			calm = 0
		}
		return calm >= 3, fmt.Sprintf("the cluster did not settle at %d groups: answers ok %t, %d planned actions, held %q, %d tasks running, %d groups",
			want, ok, len(plan.Actions), plan.Held, running, len(groups.Items))
	})
	return time.Since(start)
}

// writer writes keys through eps until stopped, remembering what was
// acknowledged and the longest write.
type writer struct {
	mu      sync.Mutex
	acked   map[string]string
	longest time.Duration
	failed  atomic.Int64
}

func (w *writer) run(ctx context.Context, t *testing.T, eps []string, token string) {
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: hostDialer(5*time.Second, true).DialContext}}
	for i := 0; ctx.Err() == nil; i++ {
		key, val := fmt.Sprintf("scale.bg.%d", i), strconv.Itoa(i)
		req, _ := http.NewRequestWithContext(ctx, "PUT", eps[i%len(eps)]+"/v1/kv/"+key, strings.NewReader(`{"value":"`+val+`"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		t0 := time.Now()
		resp, err := cl.Do(req)
		took := time.Since(t0)
		if err != nil {
			w.failed.Add(1)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		w.mu.Lock()
		if took > w.longest {
			w.longest = took
		}
		if resp.StatusCode == 200 {
			w.acked[key] = val
		} else {
			w.failed.Add(1)
		}
		w.mu.Unlock()
		time.Sleep(20 * time.Millisecond) // pacing of the background writes, not a wait
	}
}

func TestScaleOut(t *testing.T) {
	bin := os.Getenv("SLOTBENCH_SCALE_BIN")
	if bin == "" {
		t.Skip("SLOTBENCH_SCALE_BIN: the slotmeta binary")
	}
	if err := nethost.Available(); err != nil {
		t.Skip(err)
	}
	if err := nethost.CanCap(); err != nil {
		t.Skip(err)
	}
	cpu, _ := strconv.ParseFloat(scaleEnv("SLOTBENCH_SCALE_CPU", "0.25"), 64)
	conc, _ := strconv.Atoi(scaleEnv("SLOTBENCH_SCALE_C", "64"))
	dur, _ := time.ParseDuration(scaleEnv("SLOTBENCH_SCALE_DURATION", "10s"))
	out := scaleEnv("SLOTBENCH_SCALE_OUT", "scale.md")
	start := time.Now()

	data := scaleEnv("SLOTBENCH_SCALE_DATA", "/dev/shm")
	c := nethost.Start(t, nethost.Options{Bin: bin, Nodes: 3, CPU: cpu, DataRoot: data,
		Args: []string{"--groups", "3", "--log-level", "warn", "--balancer-interval", "2s"}})
	// Longer than the API's own deadline (10 s), so that a slow answer is
	// an answer (with its code) and not a client timeout.
	a := admin{t: t, token: c.Token(), cl: &http.Client{Timeout: 15 * time.Second,
		Transport: &http.Transport{DialContext: hostDialer(5*time.Second, true).DialContext}}}
	api1 := c.Hosts[0].API()
	t.Logf("3 nodes ready (%.2f cores each) in %v", cpu, time.Since(start).Round(time.Second))
	a.settled(api1, 3, 2*time.Minute)

	var stay []string
	for _, h := range c.Hosts {
		stay = append(stay, h.API())
	}
	bg := &writer{acked: map[string]string{}}
	bgCtx, stopBG := context.WithCancel(context.Background())
	var bgDone sync.WaitGroup
	bgDone.Go(func() { bg.run(bgCtx, t, stay, c.Token()) })
	defer stopBG()

	var rows []scaleRow
	preloaded := false
	measure := func(phase string) {
		// The balancer also moves slots by measured load: paused while a
		// phase is measured, so that the figures are of the settled
		// placement, not of moves the measuring load itself set off.
		if code := a.do("PUT", api1+"/v1/cluster/balancer", []byte(`{"paused":true}`), nil); code != 200 {
			t.Fatalf("pause the balancer: %d", code)
		}
		defer func() {
			if code := a.do("PUT", api1+"/v1/cluster/balancer", []byte(`{"paused":false}`), nil); code != 200 {
				t.Fatalf("resume the balancer: %d", code)
			}
		}()
		var eps []string
		for _, h := range c.Hosts {
			if h.Running() {
				eps = append(eps, h.API())
			}
		}
		routes := NewRoutes(eps, c.Token(), true)
		rctx, stopRoutes := context.WithCancel(context.Background())
		go routes.Run(rctx, time.Second)
		defer stopRoutes()
		if err := routes.Refresh(rctx); err != nil {
			t.Fatalf("routes: %v", err)
		}
		for _, workload := range []string{"kv-put", "get-linearizable"} {
			for _, mode := range []string{"spread", "routed"} {
				cfg := Config{Target: "slotmeta", Endpoints: eps, Workload: workload, Concurrency: conc, Duration: dur,
					Warmup: 2 * time.Second, Timeout: 5 * time.Second, ValueSize: 200, Keys: 4000, KeyPrefix: "scalepre",
					Preload: workload == "get-linearizable" && !preloaded, PreloadConc: 32, Channels: 1, UIDsPerCall: 1,
					ReadPercent: 90, Token: c.Token(), Namespaces: true}
				if mode == "routed" {
					cfg.Routes = routes
				}
				cpu0, at0 := nodesCPU(c), time.Now()
				r, err := Run(context.Background(), cfg, io.Discard)
				used := (nodesCPU(c) - cpu0) / (time.Since(at0).Seconds() * cpu * float64(len(eps)))
				if err != nil {
					t.Fatalf("%s %s %s: %v", phase, workload, mode, err)
				}
				if cfg.Preload {
					preloaded = true
				}
				row := scaleRow{phase: phase, workload: workload, mode: mode, nodes: len(eps), opsPerSec: r.OpsPerSec,
					p99ms: r.Latency.P99, errors: r.Errors, capUsed: used}
				rows = append(rows, row)
				t.Logf("%s: %s %s: %.0f ops/s, p99 %.1f ms, %d errors %v, nodes used %.0f %% of their caps", phase, workload, mode, r.OpsPerSec, r.Latency.P99, r.Errors, r.ErrorsBy, 100*used)
			}
		}
	}

	measure("3 nodes")
	t0 := time.Now()
	for range 3 {
		h := c.AddHost()
		t.Logf("node %d joined", h.ID)
	}
	a.settled(api1, 6, 10*time.Minute)
	scaleOut := time.Since(t0)
	t.Logf("scale-out settled in %v", scaleOut.Round(time.Second))
	measure("6 nodes")

	t0 = time.Now()
	for _, h := range c.Hosts[3:] {
		if code := a.do("POST", fmt.Sprintf("%s/v1/cluster/nodes/%d/drain", api1, h.ID), nil, nil); code != 202 {
			t.Fatalf("drain node %d: %d", h.ID, code)
		}
	}
	for _, h := range c.Hosts[3:] {
		testutil.WaitFor(t, 10*time.Minute, 2*time.Second, func() (bool, string) {
			var st struct {
				Drains []struct {
					Node uint64 `json:"node"`
					Done bool   `json:"done"`
				} `json:"drains"`
			}
			a.do("GET", api1+"/v1/cluster/balancer", nil, &st)
			done := false
			for _, d := range st.Drains {
				done = done || d.Node == uint64(h.ID) && d.Done
			}
			return done, fmt.Sprintf("node %d did not drain", h.ID)
		})
		// A removal answered with a retryable refusal (the controller's
		// leadership still moving off the node, a timeout) is asked again,
		// as scripts/drain-node.sh does.
		for try := 1; ; try++ {
			code := a.do("DELETE", fmt.Sprintf("%s/v1/cluster/nodes/%d", api1, h.ID), nil, nil)
			if code == 204 {
				break
			}
			if code != 503 || try == 5 {
				t.Fatalf("remove node %d: %d (try %d)", h.ID, code, try)
			}
			t.Logf("remove node %d: %d, asking again", h.ID, code)
			time.Sleep(time.Second) // pacing of a refused removal asked again, not a wait
		}
		h.Kill()
	}
	a.settled(api1, 3, 10*time.Minute)
	drain := time.Since(t0)
	t.Logf("drain back to 3 nodes in %v", drain.Round(time.Second))
	measure("3 nodes after the drain")

	stopBG()
	bgDone.Wait()
	lost := 0
	for key, val := range bg.acked {
		var kv struct {
			Value string `json:"value"`
		}
		if code := a.do("GET", api1+"/v1/kv/"+key, nil, &kv); code != 200 || kv.Value != val {
			lost++
		}
	}
	var tasks struct {
		Items []struct {
			Kind     string `json:"kind"`
			HashSlot *int   `json:"hash_slot"`
			Group    int    `json:"group"`
			ToGroup  int    `json:"to_group"`
			Status   string `json:"status"`
		} `json:"items"`
	}
	a.do("GET", api1+"/v1/cluster/tasks", nil, &tasks)
	kinds := map[string]int{}
	moved := map[string]int{}
	pingPong := 0
	for _, tk := range tasks.Items {
		if tk.Status != "succeeded" {
			continue
		}
		kinds[tk.Kind]++
		if tk.Kind == "slot_migration" && tk.HashSlot != nil {
			k := fmt.Sprintf("%d:%d>%d", *tk.HashSlot, tk.Group, tk.ToGroup)
			if moved[k]++; moved[k] == 2 {
				pingPong++
			}
		}
	}
	t.Logf("background writer: %d acknowledged, %d lost, %d failed, longest write %v; tasks %v; slot moved twice the same way: %d",
		len(bg.acked), lost, bg.failed.Load(), bg.longest.Round(time.Millisecond), kinds, pingPong)

	var b strings.Builder
	fmt.Fprintf(&b, "| phase | nodes | workload | load | ops/s | p99 ms | errors | caps used | vs 3 nodes |\n| --- | --: | --- | --- | --: | --: | --: | --: | --: |\n")
	base := map[string]float64{}
	for _, r := range rows {
		k := r.workload + "/" + r.mode
		if r.phase == "3 nodes" {
			base[k] = r.opsPerSec
		}
		ratio := ""
		if base[k] > 0 {
			ratio = fmt.Sprintf("%.2f×", r.opsPerSec/base[k])
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %.0f | %.1f | %d | %.0f %% | %s |\n", r.phase, r.nodes, r.workload, r.mode, r.opsPerSec, r.p99ms, r.errors, 100*r.capUsed, ratio)
	}
	fmt.Fprintf(&b, "\nEach node capped at %.2f cores (cgroup cpu quota; caps used: the nodes' CPU in the run, warm-up included, over their caps), data on %s, c=%d, %v a measurement after 2 s of warm-up; "+
		"spread: requests round-robin over the nodes; routed: writes to the group leader, reads to a replica (routes refreshed every second).\n", cpu, data, conc, dur)
	fmt.Fprintf(&b, "Scale-out (3 joins until the balancer settled at 6 groups): %v; drain of the 3 new nodes, removal and merge back to 3 groups: %v.\n",
		scaleOut.Round(time.Second), drain.Round(time.Second))
	fmt.Fprintf(&b, "Background writer through the 3 founding nodes during the whole run: %d writes acknowledged, %d lost, %d failed, longest write %v. "+
		"Tasks that succeeded: %v; slot migrations repeated in the same direction: %d.\n",
		len(bg.acked), lost, bg.failed.Load(), bg.longest.Round(time.Millisecond), kinds, pingPong)
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Print(b.String())
	if lost > 0 {
		t.Errorf("%d acknowledged writes lost", lost)
	}
	if pingPong > 0 {
		t.Errorf("%d slot migrations repeated in the same direction (ping-pong)", pingPong)
	}
}

// nodesCPU is the CPU seconds the running nodes' cgroups used so far.
func nodesCPU(c *nethost.Cluster) float64 {
	var sum float64
	for _, h := range c.Hosts {
		if h.Running() {
			sum += h.CPUSeconds()
		}
	}
	return sum
}
