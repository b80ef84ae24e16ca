// Package history keeps a node's recent vital signs — the API's reads,
// writes, p99 latency and errors, leader changes, apply lag, CPU, memory,
// disk and goroutines — one point per step in a bounded ring, for the
// console's charts (issue 30): an operator sees the last hour of every node
// without a Prometheus, and a node that lost its quorum still shows its own.
//
// Model. Every Step the Recorder reads cumulative totals — the node's own
// Prometheus registry (the API's latency histogram and answers by status,
// leader changes, the replicas' last and applied indexes, the data
// directory's disk bytes, the build's version), the API's operation counts,
// and the process's CPU time and resident memory — and turns the change
// since the previous sample into one point (the first sample, a step after
// the node starts, only takes the totals): rates per second over the step,
// the p99 from the histogram's bucket deltas (as Prometheus's
// histogram_quantile does), gauges as they are. A total that fell (a
// collector re-registered) counts from zero, never as a negative rate. At
// most Keep points are held (an hour at the default ten-second step: about
// 40 KB).
//
// Concurrency contract. Run is the only writer, owned by the node, which
// stops it; History may be called concurrently (one mutex). Sample is Run's
// step, exported for tests that drive the clock.
package history

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"

	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Defaults: an hour of ten-second points.
const (
	DefaultStep = 10 * time.Second
	DefaultKeep = 360
)

// Config configures a Recorder. Gatherer and Ops may be nil (their series
// stay 0).
type Config struct {
	Node slotstore.NodeID
	Step time.Duration // default DefaultStep
	Keep int           // default DefaultKeep
	Now  func() time.Time
	// Gatherer is the node's registry: the series the point is made of
	// are read from it by name (names.go).
	Gatherer prometheus.Gatherer
	// Ops returns the reads and writes the node's API served so far.
	Ops func() (reads, writes uint64)
	// Process returns the process's CPU seconds and resident bytes so far
	// (default: /proc/self).
	Process func() (cpuSeconds, rssBytes float64)
}

// Recorder samples a node's vital signs.
type Recorder struct {
	cfg     Config
	started time.Time

	mu      sync.Mutex
	prev    totals
	prevAt  time.Time
	version string
	points  []slotstore.HistoryPoint // oldest first, at most Keep
}

// New returns a Recorder. It reads nothing yet: its first Sample takes the
// totals the points are the changes of (a read at construction would run
// the node's collectors before the node runs — and a collector that caches
// what it read, like the data directory's size, would keep that).
func New(cfg Config) *Recorder {
	cfg.Step = cmp.Or(cfg.Step, DefaultStep)
	cfg.Keep = cmp.Or(cfg.Keep, DefaultKeep)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Process == nil {
		cfg.Process = selfProcess
	}
	return &Recorder{cfg: cfg, started: cfg.Now()}
}

// Run samples every Step until stop closes.
func (r *Recorder) Run(stop <-chan struct{}) {
	t := time.NewTicker(r.cfg.Step)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.Sample()
		}
	}
}

// Sample adds the point of the time since the previous sample (the first
// only takes the totals).
func (r *Recorder) Sample() {
	now := r.cfg.Now()
	cur, version, g := r.read()
	r.mu.Lock()
	defer r.mu.Unlock()
	if version != "" {
		r.version = version
	}
	if r.prevAt.IsZero() { // the first sample: the totals to count from
		r.prev, r.prevAt = cur, now
		return
	}
	dt := now.Sub(r.prevAt).Seconds()
	if dt <= 0 {
		return // the clock stood still or stepped back: no rate to make
	}
	p := cur.since(r.prev, dt)
	p.AtMs = now.UnixMilli()
	p.ApplyLag, p.DiskBytes, p.RSSBytes = g.applyLag, g.disk, g.rss
	p.Goroutines = float64(runtime.NumGoroutine())
	r.points = append(r.points, p)
	if len(r.points) > r.cfg.Keep {
		r.points = slices.Delete(r.points, 0, len(r.points)-r.cfg.Keep)
	}
	r.prev, r.prevAt = cur, now
}

// History returns a copy of the points, oldest first.
func (r *Recorder) History() slotstore.NodeHistory {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slotstore.NodeHistory{Node: r.cfg.Node, Version: r.version, StartedAtMs: r.started.UnixMilli(),
		StepMs: r.cfg.Step.Milliseconds(), Points: make([]slotstore.HistoryPoint, len(r.points))}
	for i, p := range r.points {
		out.Points[i] = p
		out.Points[i].Errors = maps.Clone(p.Errors)
	}
	return out
}

// Register serves the history on the peer port (GET history), for the
// console of another node.
func (r *Recorder) Register(s *peer.Server) {
	s.Handle(http.MethodGet, "history", func(_ context.Context, w http.ResponseWriter, _ *http.Request) {
		peer.WriteJSON(w, r.History())
	})
}

// selfProcess reads this process's CPU time and resident memory (0 where
// /proc does not tell).
func selfProcess() (cpuSeconds, rssBytes float64) {
	p, err := procfs.Self()
	if err != nil {
		return 0, 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0, 0
	}
	return st.CPUTime(), float64(st.ResidentMemory())
}

// Ask asks the node at the peer address addr for its history.
func Ask(ctx context.Context, peers peer.Caller, addr string) (slotstore.NodeHistory, error) {
	return peer.CallJSON[slotstore.NodeHistory](ctx, peers, http.MethodGet, addr, "history", nil, "a node's history")
}
