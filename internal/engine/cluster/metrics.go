package cluster

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// metrics are the node's Prometheus instruments, registered on the node's
// own registerer (several nodes share a test process).
type metrics struct {
	reg        prometheus.Registerer
	proposals  *prometheus.CounterVec
	batchCmds  prometheus.Histogram
	batchBytes prometheus.Histogram
	appliedIdx *prometheus.GaugeVec
	backlogs   *prometheus.GaugeVec
	queueDepth prometheus.Collector
	dropped    prometheus.Counter
	held       *prometheus.CounterVec // what a full disk kept the node from storing (disk.go)
	peerAuth   *prometheus.CounterVec
	peerWrites *prometheus.CounterVec
	// peerAuditLost counts audit records of peer writes that could not be
	// written (peerwrites.go).
	peerAuditLost prometheus.Counter
	moves         *prometheus.CounterVec
	attempts      *prometheus.CounterVec
	health        prometheus.Collector
	store         *storeCollector
	raft          *raftCollector
	state         *stateCollector
	leaders       *leaderEvents // leaderevents.go
	lat           *latencies    // latencymetrics.go
	cs            []prometheus.Collector

	reads     *prometheus.CounterVec
	readPaths []prometheus.Counter // reads' children, indexed by propose.ReadPath

	entries, commands atomic.Uint64 // totals behind Stats
	drops             atomic.Uint64
	missedAttempts    atomic.Uint64
}

func newMetrics(reg prometheus.Registerer, n *Node) (*metrics, error) {
	m := &metrics{reg: reg}
	m.proposals = counterVec("slotmeta_proposals_total", "Commands proposed, by group and outcome (ok or an error code).", "group", "outcome")
	m.batchCmds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "slotmeta_proposal_batch_commands", Help: "Commands coalesced into one Raft entry.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 13),
	})
	m.batchBytes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "slotmeta_proposal_batch_bytes", Help: "Encoded bytes of one Raft entry.",
		Buckets: prometheus.ExponentialBuckets(64, 4, 10),
	})
	m.appliedIdx = gaugeVec("slotmeta_group_applied_index", "Last Raft index applied by this node's replica of a group.", "group")
	m.backlogs = gaugeVec("slotmeta_projection_backlog",
		"Subscriber changes waiting for their membership projection, as the last scan of a group this node leads saw them (capped at one scan page).", "group")
	m.dropped = counter("slotmeta_proposals_dropped_total",
		"Raft entries dragonboat dropped before appending them (a leader transfer or an election under way), proposed again.")
	m.held = counterVec("slotmeta_raft_held_total",
		"What other nodes sent this node's replicas to store that it dropped while its disk was full (under half its reserve), by kind: message (appends) or chunk (snapshot chunks); the senders send again once it is not.", "kind")
	m.peerAuth = counterVec("slotmeta_peer_auth_failures_total",
		"Peer RPC requests refused for their cluster secret: wrong_secret, or rate_limited (the source sent too many wrong ones).", "reason")
	m.peerWrites = counterVec("slotmeta_peer_writes_total",
		"Writes other nodes asked of this node through the peer port, by the node they said they came from (unknown: no registered node) and kind: data, slot_move, channel_task (also in the audit trail), transfer, membership.",
		"from", "kind")
	m.peerAuditLost = counter("slotmeta_peer_audit_lost_total",
		"Audit records of admin actions asked through the peer port that could not be written (each also logged at error level).")
	m.moves = counterVec("slotmeta_forward_leader_moves_total",
		"Forwarded writes cut short because another node was learnt to lead the group, by what became of them: redirected (not sent, or re-sent under an Idempotency-Key) or unknown (answered timeout).", "outcome")
	m.attempts = counterVec("slotmeta_leader_transfer_attempts_total",
		"Leader transfer attempts this node made as the leader, by outcome: landed (the target leads) or missed (it did not within an election timeout).", "outcome")
	m.reads = counterVec("slotmeta_linearizable_reads_total",
		"Linearizable reads of slot groups on this node by how they were answered: lease_now (by a leader under its lease at once, per read), and per read round (a round serves every read waiting for it): lease_log (a leader under its lease, after a local log query), leader (a follower, by the leader's node), read_index (a ReadIndex round).", "path")
	for _, p := range propose.ReadPaths() {
		m.readPaths = append(m.readPaths, m.reads.WithLabelValues(p.String()))
	}
	m.health = &healthCollector{n: n,
		unreachable: prometheus.NewDesc("slotmeta_node_unreachable", "1 when the controller leader has had no status report from the node for longer than the unreachable limit (reported by the controller leader only).", []string{"node"}, nil),
		under:       prometheus.NewDesc("slotmeta_group_under_replicated", "1 when the group has fewer live voters than desired peers, or no leader (reported by the controller leader only).", []string{"group"}, nil),
		live:        prometheus.NewDesc("slotmeta_group_live_voters", "Voters of the group that report and that its leader hears (reported by the controller leader only).", []string{"group"}, nil),
		diverged: prometheus.NewDesc("slotmeta_group_check_diverged",
			"1 when the group's last state check found replicas that differ (a minority fenced, or no majority), 0 when they agreed (reported by the controller leader only, for the groups it checked).", []string{"group"}, nil),
		checked: prometheus.NewDesc("slotmeta_group_check_timestamp_seconds",
			"When the group's last state check began (reported by the controller leader only, for the groups it checked).", []string{"group"}, nil),
	}
	m.store = newStoreCollector(n)
	m.raft = newRaftCollector(n.logdb.Commit, n.events.snapshotIndex)
	m.state = newStateCollector(n)
	m.leaders = newLeaderEvents()
	m.queueDepth = &queueCollector{n: n, desc: prometheus.NewDesc("slotmeta_proposal_queue_depth",
		"Commands waiting in a group's proposal queue on this node.", []string{"group"}, nil)}
	m.lat = newLatencies()
	for _, c := range append([]prometheus.Collector{m.reads, m.proposals, m.batchCmds, m.batchBytes, m.appliedIdx, m.backlogs, m.queueDepth,
		m.dropped, m.held, m.peerAuth, m.peerWrites, m.peerAuditLost, m.moves, m.attempts, m.health, m.store, m.raft, m.state},
		append(m.lat.collectors(), m.leaders.collectors()...)...) {
		if err := reg.Register(c); err != nil {
			m.unregister()
			return nil, err
		}
		m.cs = append(m.cs, c)
	}
	return m, nil
}

// counter, counterVec and gaugeVec make the node's instruments: a name, its
// help and, for a vector, the label names.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

func (m *metrics) unregister() {
	m.store.stop()
	for _, c := range m.cs {
		m.reg.Unregister(c)
	}
	m.cs = nil
}

func (m *metrics) proposal(g slotstore.GroupID, code slotstore.Code) {
	outcome := string(code)
	if outcome == "" {
		outcome = "ok"
	}
	m.proposals.WithLabelValues(strconv.FormatUint(uint64(g), 10), outcome).Inc()
}

// readPath counts a linearizable read (or read round) by how it was answered.
func (m *metrics) readPath(p propose.ReadPath) {
	if int(p) < len(m.readPaths) {
		m.readPaths[p].Inc()
	}
}

// peerAuthFailed counts a peer request refused for its secret.
func (m *metrics) peerAuthFailed(limited bool) {
	if limited {
		m.peerAuth.WithLabelValues("rate_limited").Inc()
		return
	}
	m.peerAuth.WithLabelValues("wrong_secret").Inc()
}

// droppedProposal counts an entry dragonboat dropped that is proposed again.
func (m *metrics) droppedProposal() {
	m.drops.Add(1)
	m.dropped.Inc()
}

// heldByDisk counts what the transport dropped while the disk was full.
func (m *metrics) heldByDisk(messages, chunks int) {
	if messages > 0 {
		m.held.WithLabelValues("message").Add(float64(messages))
	}
	if chunks > 0 {
		m.held.WithLabelValues("chunk").Add(float64(chunks))
	}
}

// transferAttempt counts one attempt of a leader transfer.
func (m *metrics) transferAttempt(landed bool) {
	if landed {
		m.attempts.WithLabelValues("landed").Inc()
		return
	}
	m.missedAttempts.Add(1)
	m.attempts.WithLabelValues("missed").Inc()
}

// leaderMove counts a forward cut short by a leader change.
func (m *metrics) leaderMove(redirected bool) {
	outcome := "unknown"
	if redirected {
		outcome = "redirected"
	}
	m.moves.WithLabelValues(outcome).Inc()
}

// healthCollector reports node and group health at scrape time, on the
// controller leader only (elsewhere it has no series: one node speaks for
// the cluster, so dashboards do not sum several views).
type healthCollector struct {
	n                        *Node
	unreachable, under, live *prometheus.Desc
	diverged, checked        *prometheus.Desc
}

func (h *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{h.unreachable, h.under, h.live, h.diverged, h.checked} {
		ch <- d
	}
}

func (h *healthCollector) Collect(ch chan<- prometheus.Metric) {
	health, views, leads := h.n.leader.Observed(h.n.cfg.Now())
	if !leads {
		return
	}
	for _, nh := range health {
		v := 0.0
		if nh.Health == slotstore.NodeUnreachable {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(h.unreachable, prometheus.GaugeValue, v, strconv.FormatUint(uint64(nh.Node), 10))
	}
	for _, g := range views {
		label := strconv.FormatUint(uint64(g.ID), 10)
		v := 0.0
		if g.Health != slotstore.GroupHealthy {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(h.under, prometheus.GaugeValue, v, label)
		ch <- prometheus.MustNewConstMetric(h.live, prometheus.GaugeValue, float64(g.LiveVoters), label)
		if c := g.LastCheck; c != nil {
			v = 0
			if c.Verdict.Alarming() {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(h.diverged, prometheus.GaugeValue, v, label)
			ch <- prometheus.MustNewConstMetric(h.checked, prometheus.GaugeValue, float64(c.AtMs)/1000, label)
		}
	}
}

// backlog records the projection backlog of a led group; n < 0: the node
// does not lead it (the series is dropped).
func (m *metrics) backlog(g slotstore.GroupID, n int) {
	label := strconv.FormatUint(uint64(g), 10)
	if n < 0 {
		m.backlogs.DeleteLabelValues(label)
		return
	}
	m.backlogs.WithLabelValues(label).Set(float64(n))
}

func (m *metrics) batchObserver(slotstore.GroupID) propose.BatchObserver {
	return func(cmds, bytes int) {
		m.entries.Add(1)
		m.commands.Add(uint64(cmds))
		m.batchCmds.Observe(float64(cmds))
		m.batchBytes.Observe(float64(bytes))
	}
}

// queueCollector reports each local proposer's queue depth at scrape time.
type queueCollector struct {
	n    *Node
	desc *prometheus.Desc
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc }

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for id, g := range q.n.replicas.All() {
		ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, float64(g.Proposer.QueueDepth()),
			strconv.FormatUint(uint64(id), 10))
	}
}

// storeCollector reports the store's memory and disk at scrape time: the
// bounded parts of a node's memory outside the Go heap (block cache,
// memtables) and the open-file cache, so a soak can tell a filling cache
// from a leak.
type storeCollector struct {
	n                                          *Node
	cache, memtables, files, disk, raft, whole *prometheus.Desc
	usage                                      diskUsage
	scrapeGate                                 // stopped before the store closes
}

// scrapeGate lets a collector read what closes before the registry lets go
// of it: a scrape in progress holds it for reading, stop waits for it, and
// after stop nothing is collected.
type scrapeGate struct {
	mu     sync.RWMutex
	closed bool
}

// stop ends collection.
func (g *scrapeGate) stop() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// collect runs f unless stopped.
func (g *scrapeGate) collect(f func()) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.closed {
		f()
	}
}

func newStoreCollector(n *Node) *storeCollector {
	return &storeCollector{n: n,
		cache:     prometheus.NewDesc("slotmeta_store_block_cache_bytes", "Bytes in the store's block cache (bounded by its size).", nil, nil),
		memtables: prometheus.NewDesc("slotmeta_store_memtable_bytes", "Bytes of the store's memtables, including those waiting to be flushed or released.", nil, nil),
		files:     prometheus.NewDesc("slotmeta_store_file_cache_bytes", "Bytes held by the store's cache of open sstables.", nil, nil),
		disk: prometheus.NewDesc("slotmeta_store_disk_bytes",
			"Bytes of the store's files as the store counts them (logical sizes: its preallocated WAL counts what it wrote; slotmeta_data_dir_disk_bytes has what the disk holds).", nil, nil),
		raft: prometheus.NewDesc("slotmeta_raft_disk_bytes",
			"Bytes the disk holds for the Raft log, snapshots and NodeHost files (the data directory's raft/: allocated blocks, preallocated WALs included), summed at most every 30 s.", nil, nil),
		whole: prometheus.NewDesc("slotmeta_data_dir_disk_bytes",
			"Bytes the disk holds for the whole data directory (allocated blocks, as du counts them; store, Raft data, backups under it), summed at most every 30 s.", nil, nil),
		usage: diskUsage{path: n.cfg.DataDir, raft: filepath.Join(n.cfg.DataDir, "raft"), every: 30 * time.Second},
	}
}

func (s *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.cache
	ch <- s.memtables
	ch <- s.files
	ch <- s.disk
	ch <- s.raft
	ch <- s.whole
}

func (s *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s.collect(func() { s.collectStore(ch) })
}

func (s *storeCollector) collectStore(ch chan<- prometheus.Metric) {
	m := s.n.db.Stats()
	ch <- prometheus.MustNewConstMetric(s.cache, prometheus.GaugeValue, float64(m.BlockCacheBytes))
	ch <- prometheus.MustNewConstMetric(s.memtables, prometheus.GaugeValue, float64(m.MemTableBytes))
	ch <- prometheus.MustNewConstMetric(s.files, prometheus.GaugeValue, float64(m.FileCacheBytes))
	ch <- prometheus.MustNewConstMetric(s.disk, prometheus.GaugeValue, float64(m.DiskBytes))
	whole, raft := s.usage.bytes(time.Now())
	ch <- prometheus.MustNewConstMetric(s.raft, prometheus.GaugeValue, float64(raft))
	ch <- prometheus.MustNewConstMetric(s.whole, prometheus.GaugeValue, float64(whole))
}

// diskUsage is the bytes the disk holds for the files of the data directory
// and of its raft/ part — their allocated blocks, as du counts them: Pebble
// preallocates its WALs, so a young store of a few KB holds 18 MB (issue
// 30). One walk gives both sums, taken again when asked after every has
// passed: a node at rest is scraped and sampled by its own history every
// 10 s, and walking 256 groups' files twice each time was a twentieth of its
// idle CPU (issue 31).
type diskUsage struct {
	path, raft string
	every      time.Duration

	mu              sync.Mutex
	at              time.Time
	whole, raftPart int64
}

func (d *diskUsage) bytes(now time.Time) (whole, raft int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.at.IsZero() && now.Sub(d.at) < d.every {
		return d.whole, d.raftPart
	}
	raftPrefix := d.raft + string(filepath.Separator)
	whole, raft = 0, 0
	_ = filepath.WalkDir(d.path, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil // a file gone while walking is not counted
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		n := info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n = st.Blocks * 512 // stat(2): 512-byte units
		}
		whole += n
		if strings.HasPrefix(path, raftPrefix) {
			raft += n
		}
		return nil
	})
	d.at, d.whole, d.raftPart = now, whole, raft
	return whole, raft
}
