package history

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// instruments are the node's series the recorder reads, on a registry of
// their own, as the node, the API and the binary register them.
type instruments struct {
	reg      *prometheus.Registry
	duration *prometheus.HistogramVec
	leaders  *prometheus.CounterVec
	applied  *prometheus.GaugeVec
	last     *prometheus.GaugeVec
	disk     prometheus.Gauge
}

func newInstruments(t *testing.T) *instruments {
	t.Helper()
	in := &instruments{reg: prometheus.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: httpDuration,
			Buckets: []float64{.001, .01, .1, 1}}, []string{"method", "route", "code"}),
		leaders: prometheus.NewCounterVec(prometheus.CounterOpts{Name: leaderChanges}, []string{"group"}),
		applied: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: appliedIndex}, []string{"group"}),
		last:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: lastIndex}, []string{"group"}),
		disk:    prometheus.NewGauge(prometheus.GaugeOpts{Name: diskBytes}),
	}
	in.reg.MustRegister(in.duration, in.leaders, in.applied, in.last, in.disk,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: buildInfo, ConstLabels: prometheus.Labels{"version": "v1.2.3"}}, func() float64 { return 1 }))
	return in
}

func TestRecorderPoints(t *testing.T) {
	in := newInstruments(t)
	now := time.Unix(5000, 0)
	var reads, writes uint64
	cpu := 10.0
	// Served before the recorder began: not in its first point.
	in.duration.WithLabelValues("PUT", "/v1/users/{uid}", "200").Observe(.5)
	r := New(Config{Node: 2, Step: 10 * time.Second, Keep: 3, Now: func() time.Time { return now }, Gatherer: in.reg,
		Ops:     func() (uint64, uint64) { return reads, writes },
		Process: func() (float64, float64) { return cpu, 50 << 20 }})
	r.Sample() // the totals to count from
	if h := r.History(); len(h.Points) != 0 {
		t.Fatalf("the first sample made a point: %+v", h.Points)
	}

	// One step: 100 reads and 30 writes, 100 requests (98 quick, 2 slow),
	// 4 refused as conflicts, 2 leader changes, one replica 7 entries behind.
	now, reads, writes, cpu = now.Add(10*time.Second), 100, 30, 15
	for range 98 {
		in.duration.WithLabelValues("GET", "/v1/users/{uid}", "200").Observe(.005)
	}
	in.duration.WithLabelValues("PUT", "/v1/users/{uid}", "409").Observe(.05)
	in.duration.WithLabelValues("PUT", "/v1/users/{uid}", "409").Observe(.05)
	in.duration.WithLabelValues("POST", "/console/login", "401").Observe(.5) // an error, not the API's latency
	in.duration.WithLabelValues("GET", "/v1/watch", "200").Observe(30)       // a watch stream: left out
	in.leaders.WithLabelValues("3").Add(2)
	in.applied.WithLabelValues("3").Set(93)
	in.last.WithLabelValues("3").Set(100)
	in.applied.WithLabelValues("4").Set(10)
	in.last.WithLabelValues("4").Set(10)
	in.disk.Set(1 << 30)
	r.Sample()

	h := r.History()
	if h.Node != 2 || h.Version != "v1.2.3" || h.StepMs != 10000 || h.StartedAtMs != 5000_000 || len(h.Points) != 1 {
		t.Fatalf("history: %+v", h)
	}
	p := h.Points[0]
	if p.AtMs != 5010_000 || p.Reads != 10 || p.Writes != 3 || p.CPUCores != .5 || p.RSSBytes != 50<<20 || p.DiskBytes != 1<<30 {
		t.Fatalf("point: %+v", p)
	}
	if p.LeaderChanges != 2 || p.ApplyLag != 7 || p.Goroutines < 1 {
		t.Fatalf("leader changes %v, apply lag %v, goroutines %v", p.LeaderChanges, p.ApplyLag, p.Goroutines)
	}
	if p.Errors["409"] != .2 || p.Errors["401"] != .1 || len(p.Errors) != 2 {
		t.Fatalf("errors: %v", p.Errors)
	}
	// 100 API requests: the 99th is the first of the two in (10 ms, 100 ms]:
	// 10 + 90 × (99 − 98) / 2 = 55 ms.
	if math.Abs(p.P99Ms-55) > 1e-9 {
		t.Fatalf("p99 %v ms, want 55", p.P99Ms)
	}

	// A quiet step: no requests, no p99; the counts restarted (a collector
	// made anew) count from zero.
	now, reads, writes = now.Add(10*time.Second), 20, 0
	r.Sample()
	if p := r.History().Points[1]; p.P99Ms != 0 || p.Reads != 2 || p.Writes != 0 || p.Errors != nil {
		t.Fatalf("quiet step: %+v", p)
	}
	// Slower than every bucket: the highest bound.
	now = now.Add(10 * time.Second)
	in.duration.WithLabelValues("GET", "/v1/users/{uid}", "200").Observe(5)
	r.Sample()
	if p := r.History().Points[2]; p.P99Ms != 1000 {
		t.Fatalf("past the buckets: p99 %v ms, want 1000", p.P99Ms)
	}
	// Bounded: the oldest point goes; a clock that stood still adds none.
	now = now.Add(10 * time.Second)
	r.Sample()
	r.Sample()
	if h := r.History(); len(h.Points) != 3 || h.Points[0].AtMs != 5020_000 {
		t.Fatalf("kept %d points from %d", len(h.Points), h.Points[0].AtMs)
	}
	// The copy is the caller's.
	h = r.History()
	h.Points[0].Reads = -1
	if r.History().Points[0].Reads == -1 {
		t.Fatal("History shares its points")
	}
}

func TestRecorderWithoutSources(t *testing.T) {
	now := time.Unix(1, 0)
	r := New(Config{Now: func() time.Time { return now }})
	r.Sample()
	now = now.Add(DefaultStep)
	r.Sample()
	if h := r.History(); len(h.Points) != 1 || h.StepMs != DefaultStep.Milliseconds() || h.Points[0].Reads != 0 {
		t.Fatalf("history without sources: %+v", h)
	}
	if cpu, rss := selfProcess(); cpu < 0 || rss <= 0 { // CPU time counts in 10 ms ticks: a young process may have none
		t.Fatalf("this process: cpu %v s, rss %v B", cpu, rss)
	}
}
