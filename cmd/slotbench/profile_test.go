//go:build slotbenchprofile

// The in-process profile harness (bench/profile.sh): three real slotmeta
// nodes in this process — dragonboat NodeHosts, Pebble stores, the REST API
// on loopback HTTP servers, the server's defaults for three nodes (1
// group, 2 Raft workers, RTT 100 ms, election 5 ticks: ADR 0018) — loaded by
// slotbench's own Run, with a CPU profile taken over the load only. The build tag keeps it out of `go test ./...`.
//
//	go test -tags slotbenchprofile -run TestProfileInProcess -v ./cmd/slotbench
//
// GOMAXPROCS defaults to 3 × NumCPU here (three server processes' worth).
// SLOTBENCH_PROFILE_OUT (cpu.prof), SLOTBENCH_PROFILE_WORKLOAD (kv-put),
// SLOTBENCH_PROFILE_C (64), SLOTBENCH_PROFILE_DURATION (10s),
// SLOTBENCH_PROFILE_GROUPS (1, the server's --groups default for 3 nodes),
// SLOTBENCH_PROFILE_RAFT_WORKERS (0: the server's default); for experiments
// SLOTBENCH_PROFILE_MAXINFLIGHT, SLOTBENCH_PROFILE_MAXWAIT (proposer),
// SLOTBENCH_PROFILE_HEARTBEAT_RTT (ticks), SLOTBENCH_PROFILE_QUIESCE=0 (quiesce off) and
// SLOTBENCH_PROFILE_MEMTABLE (store memtable bytes). The workload "idle"
// profiles the settled cluster without load (what many groups cost at
// rest); SLOTBENCH_PROFILE_HEAP names a heap profile taken at the end.
package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestProfileInProcess(t *testing.T) {
	out := envOr("SLOTBENCH_PROFILE_OUT", "cpu.prof")
	workload := envOr("SLOTBENCH_PROFILE_WORKLOAD", "kv-put")
	conc, err := strconv.Atoi(envOr("SLOTBENCH_PROFILE_C", "64"))
	if err != nil {
		t.Fatal(err)
	}
	dur, err := time.ParseDuration(envOr("SLOTBENCH_PROFILE_DURATION", "10s"))
	if err != nil {
		t.Fatal(err)
	}
	// Three server processes have 3 × GOMAXPROCS Ps between them; three
	// nodes in one process with only NumCPU Ps stall whenever fdatasync
	// calls hold the Ps (half the throughput, leader churn). Emulate the
	// processes unless GOMAXPROCS is set.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(3 * runtime.NumCPU())
	}
	t.Logf("GOMAXPROCS %d", runtime.GOMAXPROCS(0))
	groups, err := strconv.Atoi(envOr("SLOTBENCH_PROFILE_GROUPS", "1"))
	if err != nil {
		t.Fatal(err)
	}
	workers, err := strconv.Atoi(envOr("SLOTBENCH_PROFILE_RAFT_WORKERS", "0"))
	if err != nil {
		t.Fatal(err)
	}
	c := slotstoretest.Start(t, slotstoretest.Options{
		Nodes: 3, Groups: groups, RTT: 100 * time.Millisecond,
		Tune: func(cfg *cluster.Config) {
			cfg.ElectionRTT = 5
			cfg.RaftWorkers = workers
			if v, err := strconv.Atoi(os.Getenv("SLOTBENCH_PROFILE_MAXINFLIGHT")); err == nil {
				cfg.Proposer.MaxInFlight = v
			}
			if v, err := strconv.Atoi(os.Getenv("SLOTBENCH_PROFILE_MEMTABLE")); err == nil {
				cfg.Store.MemTableSize = uint64(v)
			}
			cfg.DisableQuiesce = os.Getenv("SLOTBENCH_PROFILE_QUIESCE") == "0"
			if v, err := strconv.ParseUint(os.Getenv("SLOTBENCH_PROFILE_HEARTBEAT_RTT"), 10, 64); err == nil {
				cfg.HeartbeatRTT = v
			}
			if v, err := time.ParseDuration(os.Getenv("SLOTBENCH_PROFILE_MAXWAIT")); err == nil {
				cfg.Proposer.MaxWait = v
			}
		},
	})
	var eps []string
	for _, n := range c.Nodes {
		reg := prometheus.NewRegistry()
		h, err := httpapi.New(httpapi.Config{Backend: n, Registerer: reg, Gatherer: reg, OpenAPI: slotmeta.OpenAPI,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// The server's own http.Server settings (cmd/server/main.go).
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		eps = append(eps, "http://"+ln.Addr().String())
	}
	cfg := Config{Target: "slotmeta", Endpoints: eps, Workload: workload, Concurrency: conc,
		Duration: dur, Timeout: 5 * time.Second, ValueSize: 200, Keys: 2000, KeyPrefix: "sbpre", Preload: true,
		PreloadConc: 32, Channels: 64, UIDsPerCall: 10, ReadPercent: 90}
	// SLOTBENCH_PROFILE_WATCHERS=N: N one-key watch streams beside the
	// load (with the workload kv-put-watched, SLOTBENCH_PROFILE_KEYS=N).
	if v, err := strconv.Atoi(os.Getenv("SLOTBENCH_PROFILE_WATCHERS")); err == nil {
		cfg.Watchers = v
	}
	// SLOTBENCH_PROFILE_WATCH_STREAMS=K: the watchers over K multiplexed
	// streams per node.
	if v, err := strconv.Atoi(os.Getenv("SLOTBENCH_PROFILE_WATCH_STREAMS")); err == nil {
		cfg.WatchStreams = v
	}
	if v, err := strconv.Atoi(os.Getenv("SLOTBENCH_PROFILE_KEYS")); err == nil {
		cfg.Keys = v
	}
	cfg.Batch = 100 // batch-get: keys a request (SLOTBENCH_PROFILE_BATCH)
	if v, err := strconv.Atoi(os.Getenv("SLOTBENCH_PROFILE_BATCH")); err == nil {
		cfg.Batch = v
	}
	// Warm up (and preload) without the profiler until a warm-up run sees
	// no errors: right after the start the preferred-leader reconciler
	// still moves group leaders (route_not_ready while it does).
	warm := cfg
	warm.Duration = 3 * time.Second
	if workload == "idle" {
		profileIdle(t, out, dur)
		return
	}
	for i := range 10 {
		r, err := Run(context.Background(), warm, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		warm.Preload = false
		t.Logf("warm-up %d: %.0f ops/s, %d errors %v", i+1, r.OpsPerSec, r.Errors, r.ErrorsBy)
		if r.Errors == 0 {
			break
		}
	}
	cfg.Preload = false
	// SLOTBENCH_PROFILE_TO=leader|followers (one group): send the load only
	// to group 1's leader, or only to the other nodes (forwarded writes).
	if to := os.Getenv("SLOTBENCH_PROFILE_TO"); to != "" {
		st, _ := c.Nodes[0].Routes().Group(1)
		var sel []string
		for i, n := range c.Nodes {
			if (n.NodeID() == st.Leader) == (to == "leader") {
				sel = append(sel, eps[i])
			}
		}
		t.Logf("load only to %s of group 1 (leader node %d): %v", to, st.Leader, sel)
		cfg.Endpoints = sel
	}
	stop := startCPUProfile(t, out)
	res, err := Run(context.Background(), cfg, os.Stderr)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	printResult(os.Stdout, res)
	writeHeapProfile(t)
	// The nodes' counters, summed.
	var st cluster.Stats
	for _, n := range c.Nodes {
		s := n.Stats()
		st.Entries, st.Commands, st.ReadRounds, st.Reads = st.Entries+s.Entries, st.Commands+s.Commands, st.ReadRounds+s.ReadRounds, st.Reads+s.Reads
		st.LeaseRounds, st.RemoteRounds = st.LeaseRounds+s.LeaseRounds, st.RemoteRounds+s.RemoteRounds
		st.LeaseNowReads += s.LeaseNowReads
		st.Forward.Batches, st.Forward.Batched, st.Forward.Singles = st.Forward.Batches+s.Forward.Batches,
			st.Forward.Batched+s.Forward.Batched, st.Forward.Singles+s.Forward.Singles
	}
	if st.Entries > 0 {
		t.Logf("proposer: %d entries, %.2f commands per Raft entry (whole test)", st.Entries, float64(st.Commands)/float64(st.Entries))
	}
	if f := st.Forward; f.Batches > 0 || f.Batched > 0 || f.Singles > 0 {
		t.Logf("forwarding: %d writes forwarded in %d peer requests (%d alone, %d in batches; whole test)",
			f.Singles+f.Batched, f.Singles+f.Batches, f.Singles, f.Batched)
	}
	if rounds, reads := float64(st.ReadRounds), float64(st.Reads); rounds > 0 || st.LeaseNowReads > 0 {
		t.Logf("reads: %d answered at once under a leader's lease (no round); %.0f read rounds, %.2f linearizable reads per round; %d rounds answered by a leader's lease, %d by a leader's lease over peer RPC (whole test)",
			st.LeaseNowReads, rounds, reads/max(rounds, 1), st.LeaseRounds, st.RemoteRounds)
	}
}

// profileIdle profiles the cluster at rest: after the start's leader moves
// have settled and the groups quiesced (SLOTBENCH_PROFILE_SETTLE, default
// 30 s), dur with no load. The groups quiesce ten election timeouts (5 s)
// after their last message, and the preferred-leader reconciler moves
// leaders for the first 10–20 s: a profile that began 5 s after the start
// (the old default) caught 256 groups still heartbeating — a Raft
// transport busy with traffic a cluster at rest does not have (counted by
// message type: 1 500 heartbeats a second across the 3 nodes 10–20 s in,
// the controller group's 22 a second from 25 s on).
func profileIdle(t *testing.T, out string, dur time.Duration) {
	settle := 30 * time.Second
	if d, err := time.ParseDuration(os.Getenv("SLOTBENCH_PROFILE_SETTLE")); err == nil {
		settle = d
	}
	time.Sleep(settle) // a hold: a fixed settle time (no state to poll), as documented
	stop := startCPUProfile(t, out)
	time.Sleep(dur) // a hold: the idle span profiled
	stop()
	t.Logf("idle for %v", dur)
	writeHeapProfile(t)
}

// startCPUProfile starts a CPU profile into out; stop ends it.
func startCPUProfile(t *testing.T, out string) (stop func()) {
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// writeHeapProfile writes SLOTBENCH_PROFILE_HEAP, if set, after a GC.
func writeHeapProfile(t *testing.T) {
	p := os.Getenv("SLOTBENCH_PROFILE_HEAP")
	if p == "" {
		return
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("heap: %d MiB in use, %d MiB from the OS (3 nodes)", ms.HeapInuse>>20, ms.Sys>>20)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Fatal(err)
	}
}
