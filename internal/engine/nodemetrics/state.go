package nodemetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// stateCollector reports, from every node, what its copy of the controller
// state and its own counters say (issue 30): the route revision, the
// controller's applied index, the groups' config epochs, tasks by kind and
// state, operator pins and
// the balancer's pause, the decisions recorded and kept, the Raft snapshots
// that moved through this node, and whether this node's Raft connections to
// each other node open. Every node exports them, so they stay while the controller leader
// is gone (each node's copy as it last applied it).
//
// Concurrency contract: it reads the atomic controller state and atomic
// counters only; safe at any time, also after the node closed.
type stateCollector struct {
	cfg                                         Config
	revision, applied, tasks, pins, paused, snp *prometheus.Desc
	connected, connFailures                     *prometheus.Desc
	decided, decisions, epochs                  *prometheus.Desc
	failed, version                             *prometheus.Desc
	diskFree, diskTotal, diskLow, diskFull      *prometheus.Desc
}

func newStateCollector(cfg Config) *stateCollector {
	return &stateCollector{cfg: cfg,
		revision: prometheus.NewDesc("slotmeta_route_revision", "The routing table's revision in this node's copy of the controller state.", nil, nil),
		applied:  prometheus.NewDesc("slotmeta_controller_applied_index", "The last controller command this node's controller replica applied.", nil, nil),
		tasks: prometheus.NewDesc("slotmeta_tasks", "Tasks the controller keeps, by kind and status (this node's copy).",
			[]string{"kind", "status"}, nil),
		pins:   prometheus.NewDesc("slotmeta_balancer_pinned_groups", "Groups an operator's manual action pinned (the balancer leaves them be).", nil, nil),
		paused: prometheus.NewDesc("slotmeta_balancer_paused", "1 while an operator paused the balancer.", nil, nil),
		snp: prometheus.NewDesc("slotmeta_snapshots_total",
			"Raft snapshots of slot groups through this node since it started: received, recovered (also at restarts), sent, send_aborted.", []string{"event"}, nil),
		failed: prometheus.NewDesc("slotmeta_replica_failed",
			"1 for each replica the controller places on this node that could not start here (the engine refused it or panicked loading it); the node runs without it.",
			[]string{"group", "replica"}, nil),
		diskFree: prometheus.NewDesc("slotmeta_disk_free_bytes",
			"Space left to the node in its data directory's filesystem (its ballast counted as free), as the disk guard last measured it.", nil, nil),
		diskTotal: prometheus.NewDesc("slotmeta_disk_total_bytes", "The size of the data directory's filesystem.", nil, nil),
		diskLow: prometheus.NewDesc("slotmeta_disk_low",
			"1 while the space left is under the node's reserve (--disk-reserve-bytes): it refuses the writes it would lead, until space is freed.", nil, nil),
		diskFull: prometheus.NewDesc("slotmeta_disk_full",
			"1 while the space left is under half the node's reserve: its replicas also store nothing other nodes send them (they fall behind, and catch up once it is not).", nil, nil),
		version: prometheus.NewDesc("slotmeta_cluster_version_info",
			"1, labelled with the cluster version this node's copy of the controller state records (0.1 until every node runs a newer release) and the release line this node runs.",
			[]string{"cluster_version", "version"}, nil),
		epochs: prometheus.NewDesc("slotmeta_group_config_epoch",
			"The group's config epoch (raised by every membership and slot change) in this node's copy of the controller state.", []string{"group"}, nil),
		decided: prometheus.NewDesc("slotmeta_decisions_recorded_total",
			"Decisions the controller recorded (the reconciler's, the balancer's, the tasks' steps), as this node's copy counts them.", nil, nil),
		decisions: prometheus.NewDesc("slotmeta_decision_log_entries",
			"Decisions the bounded decision log keeps, by kind (this node's copy).", []string{"kind"}, nil),
		connected: prometheus.NewDesc("slotmeta_raft_peer_connected",
			"1 when this node's last attempt to open a Raft connection to the node succeeded, 0 when it failed (a peer's reachability as this node sees it; absent before any attempt).", []string{"node"}, nil),
		connFailures: prometheus.NewDesc("slotmeta_raft_peer_connection_failures_total",
			"Failed attempts of this node to open a Raft connection to the node.", []string{"node"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.revision, c.applied, c.tasks, c.pins, c.paused, c.snp, c.connected, c.connFailures, c.decided, c.decisions, c.epochs, c.failed, c.version, c.diskFree, c.diskTotal, c.diskLow, c.diskFull} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.cfg.Controller()
	now := c.cfg.Now().UnixMilli()
	ch <- prometheus.MustNewConstMetric(c.revision, prometheus.GaugeValue, float64(st.RouteRevision))
	ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(st.AppliedIndex))
	ch <- prometheus.MustNewConstMetric(c.version, prometheus.GaugeValue, 1, st.Version().String(), c.cfg.Version.String())
	if ds, ok := c.cfg.Disk(); ok {
		low, full := 0.0, 0.0
		if ds.Low {
			low = 1
		}
		if ds.Full {
			full = 1
		}
		ch <- prometheus.MustNewConstMetric(c.diskFree, prometheus.GaugeValue, float64(ds.Free))
		ch <- prometheus.MustNewConstMetric(c.diskTotal, prometheus.GaugeValue, float64(ds.Total))
		ch <- prometheus.MustNewConstMetric(c.diskLow, prometheus.GaugeValue, low)
		ch <- prometheus.MustNewConstMetric(c.diskFull, prometheus.GaugeValue, full)
	}
	type kindStatus struct{ kind, status string }
	counts := map[kindStatus]int{}
	for _, t := range st.Tasks {
		counts[kindStatus{string(t.Kind), string(t.Status)}]++
	}
	for k, v := range counts {
		ch <- prometheus.MustNewConstMetric(c.tasks, prometheus.GaugeValue, float64(v), k.kind, k.status)
	}
	for id, g := range st.Groups {
		ch <- prometheus.MustNewConstMetric(c.epochs, prometheus.GaugeValue, float64(g.ConfigEpoch), strconv.FormatUint(uint64(id), 10))
	}
	for _, rf := range c.cfg.ReplicaFailures() {
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, 1,
			strconv.FormatUint(uint64(rf.Group), 10), strconv.FormatUint(rf.ReplicaID, 10))
	}
	ch <- prometheus.MustNewConstMetric(c.decided, prometheus.CounterValue, float64(st.DecisionSeq))
	byKind := map[string]int{}
	for _, d := range st.Decisions {
		byKind[string(d.Kind)]++
	}
	for kind, v := range byKind {
		ch <- prometheus.MustNewConstMetric(c.decisions, prometheus.GaugeValue, float64(v), kind)
	}
	pinned := 0
	for g := range st.Pins {
		if st.PinnedAt(g, now) {
			pinned++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.pins, prometheus.GaugeValue, float64(pinned))
	paused := 0.0
	if st.Balancer.Paused {
		paused = 1
	}
	ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, paused)
	s := c.cfg.Snapshots()
	for event, v := range map[string]uint64{"received": s.Received, "recovered": s.Recovered, "sent": s.Sent, "send_aborted": s.SendAborted} {
		ch <- prometheus.MustNewConstMetric(c.snp, prometheus.CounterValue, float64(v), event)
	}
	for id, node := range st.Nodes {
		up, failures, known := c.cfg.Connection(node.RaftAddr)
		if !known || id == c.cfg.NodeID {
			continue
		}
		label := strconv.FormatUint(uint64(id), 10)
		v := 0.0
		if up {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, v, label)
		ch <- prometheus.MustNewConstMetric(c.connFailures, prometheus.CounterValue, float64(failures), label)
	}
}
