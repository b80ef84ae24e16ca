package nodemetrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// latencies are the node's latency histograms and transfer counters (issue
// 30), each fed by a hook of the package that owns the step: the Raft log's
// saves (raftlog.Factory.Saved: the write and its fsync), the state
// machine's applies (fsm.Config.OnApplied), peer RPC calls
// (peer.Client.OnCall), forward hops (dispatch.Config.Forwarded), and the
// snapshot chunks the Raft transport moves (raftnet.Transport.SnapshotBytes).
type latencies struct {
	logSave, apply prometheus.Histogram
	peerCall       *prometheus.HistogramVec
	forward        *prometheus.HistogramVec
	snapshotBytes  *prometheus.CounterVec
	sentBytes      prometheus.Counter // snapshotBytes' children
	receivedBytes  prometheus.Counter
}

// latencyBuckets: 100 µs to about 6.5 s, doubling.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 17)

func newLatencies() *latencies {
	l := &latencies{
		logSave: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "slotmeta_raft_log_save_seconds",
			Help:    "Saves of Raft state that reached the disk on this node: the write and its fsync (one per step-worker round; commit-only saves are deferred and not counted).",
			Buckets: latencyBuckets}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "slotmeta_apply_seconds",
			Help:    "Applies of a run of committed entries to a slot group's state machine on this node (one Pebble batch, unsynced).",
			Buckets: latencyBuckets}),
		peerCall: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "slotmeta_peer_request_seconds",
			Help:    "Peer RPC requests this node sent, by endpoint and outcome (ok or error), to the answer's headers.",
			Buckets: latencyBuckets}, []string{"path", "outcome"}),
		forward: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "slotmeta_forward_seconds",
			Help:    "Writes this node forwarded to the leader's node, per hop, by outcome (ok or error).",
			Buckets: latencyBuckets}, []string{"outcome"}),
		snapshotBytes: counterVec("slotmeta_snapshot_bytes_total",
			"Bytes of Raft snapshot chunks this node sent to followers or received from leaders, by direction (sent, received).", "direction"),
	}
	l.sentBytes, l.receivedBytes = l.snapshotBytes.WithLabelValues("sent"), l.snapshotBytes.WithLabelValues("received")
	return l
}

func (l *latencies) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.logSave, l.apply, l.peerCall, l.forward, l.snapshotBytes}
}

func outcome(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// peerCalled observes one peer call, labelled by its endpoint (the path
// without its query: the endpoints are few and fixed).
func (l *latencies) peerCalled(path string, took time.Duration, err error) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	l.peerCall.WithLabelValues(path, outcome(err)).Observe(took.Seconds())
}

// forwarded observes one forward hop.
func (l *latencies) forwarded(took time.Duration, err error) {
	l.forward.WithLabelValues(outcome(err)).Observe(took.Seconds())
}

// snapshotChunk counts a snapshot chunk's bytes.
func (l *latencies) snapshotChunk(sent bool, n int) {
	if sent {
		l.sentBytes.Add(float64(n))
		return
	}
	l.receivedBytes.Add(float64(n))
}

// Applied records a group's apply: its new applied index and how long it
// took.
func (m *Metrics) Applied(g slotstore.GroupID, index uint64, took time.Duration) {
	m.appliedIdx.WithLabelValues(strconv.FormatUint(uint64(g), 10)).Set(float64(index))
	m.lat.apply.Observe(took.Seconds())
}
