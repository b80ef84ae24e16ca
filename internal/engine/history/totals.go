package history

import (
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The series a point is read from, by name: the registry is the node's
// own, so these are the node's instruments (cluster, httpapi, cmd/server).
const (
	httpDuration  = "slotmeta_http_request_duration_seconds" // labels method, route, code
	leaderChanges = "slotmeta_leader_changes_total"
	appliedIndex  = "slotmeta_group_applied_index"    // label group
	lastIndex     = "slotmeta_replica_log_last_index" // label group
	diskBytes     = "slotmeta_data_dir_disk_bytes"
	buildInfo     = "slotmeta_build_info" // label version
)

// totals are the cumulative counts a point is the change of.
type totals struct {
	reads, writes uint64
	cpu           float64
	leaderChanges float64
	// latency: the API histogram's cumulative bucket counts by upper bound
	// (summed over its series), and its count.
	bounds  []float64
	buckets []uint64
	count   uint64
	errors  map[string]uint64 // answers by HTTP status ≥ 400
}

// gauges are the values a point shows as sampled.
type gauges struct {
	applyLag, disk, rss float64
}

// read takes the totals and gauges now, and the build's version.
func (r *Recorder) read() (t totals, version string, g gauges) {
	if r.cfg.Ops != nil {
		t.reads, t.writes = r.cfg.Ops()
	}
	t.cpu, g.rss = r.cfg.Process()
	t.errors = map[string]uint64{}
	if r.cfg.Gatherer == nil {
		return t, "", g
	}
	mfs, _ := r.cfg.Gatherer.Gather() // a failing collector leaves the others
	applied, last := map[string]float64{}, map[string]float64{}
	for _, mf := range mfs {
		switch mf.GetName() {
		case httpDuration:
			for _, m := range mf.GetMetric() {
				t.addRequests(m)
			}
		case leaderChanges:
			for _, m := range mf.GetMetric() {
				t.leaderChanges += m.GetCounter().GetValue()
			}
		case appliedIndex:
			for _, m := range mf.GetMetric() {
				applied[label(m, "group")] = m.GetGauge().GetValue()
			}
		case lastIndex:
			for _, m := range mf.GetMetric() {
				last[label(m, "group")] = m.GetGauge().GetValue()
			}
		case diskBytes:
			for _, m := range mf.GetMetric() {
				g.disk = m.GetGauge().GetValue()
			}
		case buildInfo:
			for _, m := range mf.GetMetric() {
				version = label(m, "version")
			}
		}
	}
	for group, l := range last {
		if a, ok := applied[group]; ok {
			g.applyLag = max(g.applyLag, l-a)
		}
	}
	return t, version, g
}

// addRequests adds one series of the API's latency histogram: its answers
// of 4xx and 5xx by status, and — for the data API, not a watch stream
// (it lasts as long as its client) nor the console — its buckets.
func (t *totals) addRequests(m *dto.Metric) {
	h := m.GetHistogram()
	if code := label(m, "code"); code >= "400" && len(code) == 3 {
		t.errors[code] += h.GetSampleCount()
	}
	route := label(m, "route")
	if !strings.HasPrefix(route, "/v1/") || strings.HasPrefix(route, "/v1/watch") {
		return
	}
	t.count += h.GetSampleCount()
	for _, b := range h.GetBucket() {
		i, found := slices.BinarySearch(t.bounds, b.GetUpperBound())
		if !found {
			t.bounds = slices.Insert(t.bounds, i, b.GetUpperBound())
			t.buckets = slices.Insert(t.buckets, i, 0)
		}
		t.buckets[i] += b.GetCumulativeCount()
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// since is the point of the change from prev over dt seconds.
func (t totals) since(prev totals, dt float64) slotstore.HistoryPoint {
	p := slotstore.HistoryPoint{
		Reads:         float64(grown(prev.reads, t.reads)) / dt,
		Writes:        float64(grown(prev.writes, t.writes)) / dt,
		CPUCores:      grownF(prev.cpu, t.cpu) / dt,
		LeaderChanges: grownF(prev.leaderChanges, t.leaderChanges),
	}
	for code, n := range t.errors {
		if d := grown(prev.errors[code], n); d > 0 {
			if p.Errors == nil {
				p.Errors = map[string]float64{}
			}
			p.Errors[code] = float64(d) / dt
		}
	}
	p.P99Ms = 1000 * t.quantileSince(prev, 0.99)
	return p
}

// quantileSince estimates quantile q of the requests served since prev from
// the bucket deltas, interpolating linearly within the bucket it falls in
// (as histogram_quantile does); the highest finite bound when it falls
// past them, 0 without requests.
func (t totals) quantileSince(prev totals, q float64) float64 {
	count := grown(prev.count, t.count)
	if count == 0 {
		return 0
	}
	rank := q * float64(count)
	lower, below := 0.0, uint64(0)
	for i, bound := range t.bounds {
		var was uint64
		if j, ok := slices.BinarySearch(prev.bounds, bound); ok {
			was = prev.buckets[j]
		}
		cum := grown(was, t.buckets[i])
		if float64(cum) >= rank {
			if cum == below {
				return bound
			}
			return lower + (bound-lower)*(rank-float64(below))/float64(cum-below)
		}
		lower, below = bound, cum
	}
	if len(t.bounds) == 0 {
		return 0
	}
	return t.bounds[len(t.bounds)-1]
}

// grown is how much a cumulative count grew; one that fell (its collector
// was made anew) counts from zero.
func grown(old, now uint64) uint64 {
	if now < old {
		return now
	}
	return now - old
}

func grownF(old, now float64) float64 {
	if now < old || math.IsNaN(old) {
		return now
	}
	return now - old
}
