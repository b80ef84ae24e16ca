package nodemetrics

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Metrics are the node's Prometheus instruments, registered on the node's
// own registerer (several nodes share a test process).
type Metrics struct {
	reg        prometheus.Registerer
	proposals  *prometheus.CounterVec
	batchCmds  prometheus.Histogram
	batchBytes prometheus.Histogram
	appliedIdx *prometheus.GaugeVec
	backlogs   *prometheus.GaugeVec
	queueDepth prometheus.Collector
	dropped    prometheus.Counter
	held       *prometheus.CounterVec // what a full disk kept the node from storing (HeldByDisk)
	peerAuth   *prometheus.CounterVec
	peerWrites *prometheus.CounterVec
	// peerAuditLost counts audit records of peer writes that could not be
	// written (the node's peer writes).
	peerAuditLost prometheus.Counter
	moves         *prometheus.CounterVec
	attempts      *prometheus.CounterVec
	health        prometheus.Collector
	store         *storeCollector
	raft          *raftCollector
	state         *stateCollector
	leaders       *leaderEvents
	lat           *latencies // latency.go
	cs            []prometheus.Collector

	reads     *prometheus.CounterVec
	readPaths []prometheus.Counter // reads' children, indexed by propose.ReadPath

	entries, commands atomic.Uint64 // totals behind Stats
	drops             atomic.Uint64
	missedAttempts    atomic.Uint64
}

// New makes the node's instruments and registers them on cfg.Registerer;
// it fails (registering nothing) if collectors of the same names but other
// shapes are registered there.
func New(cfg Config) (*Metrics, error) {
	reg := cfg.Registerer
	m := &Metrics{reg: reg}
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
	m.health = &healthCollector{observed: cfg.Observed, now: cfg.Now,
		unreachable: prometheus.NewDesc("slotmeta_node_unreachable", "1 when the controller leader has had no status report from the node for longer than the unreachable limit (reported by the controller leader only).", []string{"node"}, nil),
		under:       prometheus.NewDesc("slotmeta_group_under_replicated", "1 when the group has fewer live voters than desired peers, or no leader (reported by the controller leader only).", []string{"group"}, nil),
		live:        prometheus.NewDesc("slotmeta_group_live_voters", "Voters of the group that report and that its leader hears (reported by the controller leader only).", []string{"group"}, nil),
		diverged: prometheus.NewDesc("slotmeta_group_check_diverged",
			"1 when the group's last state check found replicas that differ (a minority fenced, or no majority), 0 when they agreed (reported by the controller leader only, for the groups it checked).", []string{"group"}, nil),
		checked: prometheus.NewDesc("slotmeta_group_check_timestamp_seconds",
			"When the group's last state check began (reported by the controller leader only, for the groups it checked).", []string{"group"}, nil),
	}
	m.store = newStoreCollector(cfg.DataDir, cfg.StoreStats)
	m.raft = newRaftCollector(cfg.RaftCommit, cfg.SnapshotIndex)
	m.state = newStateCollector(cfg)
	m.leaders = newLeaderEvents()
	m.queueDepth = &queueCollector{depths: cfg.QueueDepths, desc: prometheus.NewDesc("slotmeta_proposal_queue_depth",
		"Commands waiting in a group's proposal queue on this node.", []string{"group"}, nil)}
	m.lat = newLatencies()
	for _, c := range append([]prometheus.Collector{m.reads, m.proposals, m.batchCmds, m.batchBytes, m.appliedIdx, m.backlogs, m.queueDepth,
		m.dropped, m.held, m.peerAuth, m.peerWrites, m.peerAuditLost, m.moves, m.attempts, m.health, m.store, m.raft, m.state},
		append(m.lat.collectors(), m.leaders.collectors()...)...) {
		if err := reg.Register(c); err != nil {
			m.Unregister()
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

// Unregister stops the store's collection and takes every instrument off
// the registerer (a Start retried on a shared registry registers again).
func (m *Metrics) Unregister() {
	m.store.stop()
	for _, c := range m.cs {
		m.reg.Unregister(c)
	}
	m.cs = nil
}

// Proposal counts a proposed command of group g by its outcome.
func (m *Metrics) Proposal(g slotstore.GroupID, code slotstore.Code) {
	outcome := string(code)
	if outcome == "" {
		outcome = "ok"
	}
	m.proposals.WithLabelValues(strconv.FormatUint(uint64(g), 10), outcome).Inc()
}

// ReadPath counts a linearizable read (or read round) by how it was answered.
func (m *Metrics) ReadPath(p propose.ReadPath) {
	if int(p) < len(m.readPaths) {
		m.readPaths[p].Inc()
	}
}

// PeerAuthFailed counts a peer request refused for its secret.
func (m *Metrics) PeerAuthFailed(limited bool) {
	if limited {
		m.peerAuth.WithLabelValues("rate_limited").Inc()
		return
	}
	m.peerAuth.WithLabelValues("wrong_secret").Inc()
}

// DroppedProposal counts an entry dragonboat dropped that is proposed again.
func (m *Metrics) DroppedProposal() {
	m.drops.Add(1)
	m.dropped.Inc()
}

// HeldByDisk counts what the transport dropped while the disk was full.
func (m *Metrics) HeldByDisk(messages, chunks int) {
	if messages > 0 {
		m.held.WithLabelValues("message").Add(float64(messages))
	}
	if chunks > 0 {
		m.held.WithLabelValues("chunk").Add(float64(chunks))
	}
}

// TransferAttempt counts one attempt of a leader transfer.
func (m *Metrics) TransferAttempt(landed bool) {
	if landed {
		m.attempts.WithLabelValues("landed").Inc()
		return
	}
	m.missedAttempts.Add(1)
	m.attempts.WithLabelValues("missed").Inc()
}

// LeaderMove counts a forward cut short by a leader change.
func (m *Metrics) LeaderMove(redirected bool) {
	outcome := "unknown"
	if redirected {
		outcome = "redirected"
	}
	m.moves.WithLabelValues(outcome).Inc()
}

// Backlog records the projection backlog of a led group; n < 0: the node
// does not lead it (the series is dropped).
func (m *Metrics) Backlog(g slotstore.GroupID, n int) {
	label := strconv.FormatUint(uint64(g), 10)
	if n < 0 {
		m.backlogs.DeleteLabelValues(label)
		return
	}
	m.backlogs.WithLabelValues(label).Set(float64(n))
}

// BatchObserver counts the entries a group's proposer makes and their commands.
func (m *Metrics) BatchObserver(slotstore.GroupID) propose.BatchObserver {
	return func(cmds, bytes int) {
		m.entries.Add(1)
		m.commands.Add(uint64(cmds))
		m.batchCmds.Observe(float64(cmds))
		m.batchBytes.Observe(float64(bytes))
	}
}
