// Package nodemetrics holds a node's Prometheus instruments (issue 30):
// the counters and histograms the engine's packages feed through hooks
// (proposals, reads, applies, forwards, peer calls, snapshots, leader
// events, transfers, a full disk's drops), and the collectors that read
// the node at scrape time — the controller leader's view of the cluster's
// health, the proposal queues, the store's memory and disk, every Raft
// replica's state, and the node's copy of the controller state.
//
// It reads the node only through Config's functions, so that it needs no
// node type; the node (package cluster) wires them.
//
// Concurrency contract: every hook is safe from any goroutine. The
// collectors that read what closes before the registry lets go of them
// (the store, the NodeHost) run under a scrape gate the node stops first
// (StopRaft, Unregister); the others read atomic state only.
package nodemetrics

import (
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/diskguard"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Config is what the instruments are registered on and what the
// collectors read of their node. Every function is called at scrape time
// and must not block.
type Config struct {
	Registerer prometheus.Registerer
	NodeID     slotstore.NodeID
	// Version is the release line the node runs.
	Version slotstore.Version
	DataDir string
	Now     func() time.Time

	// Observed is the controller leader's view of the nodes' and groups'
	// health (leads false elsewhere: no series).
	Observed func(now time.Time) (nodes []slotstore.NodeHealth, groups []slotstore.GroupView, leads bool)
	// QueueDepths is each local proposer's queue depth.
	QueueDepths func() map[slotstore.GroupID]int
	// StoreStats is the store's memory and disk.
	StoreStats func() store.Stats
	// RaftCommit is the commit index Raft handed a replica's log;
	// SnapshotIndex a shard's newest snapshot's index.
	RaftCommit    func(shard, replica uint64) (uint64, bool)
	SnapshotIndex func(shard uint64) (uint64, bool)
	// Controller is the node's copy of the controller state.
	Controller func() *controller.State
	// Disk is what the disk guard last measured (false: no guard).
	Disk func() (diskguard.State, bool)
	// ReplicaFailures are the replicas that could not start here.
	ReplicaFailures func() []slotstore.ReplicaFailure
	// Snapshots counts the Raft snapshots through this node.
	Snapshots func() SnapshotCounts
	// Connection is this node's last Raft connection attempt to addr.
	Connection func(addr string) (up bool, failures uint64, known bool)
}

// SnapshotCounts are the Raft snapshots of slot groups through a node
// since it started.
type SnapshotCounts struct {
	Received, Recovered uint64
	// Sent counts the snapshots streamed to followers completely,
	// SendAborted the ones that broke off.
	Sent, SendAborted uint64
}

// Totals are the counts behind the node's Stats.
type Totals struct {
	Entries, Commands, DroppedProposals, MissedTransferAttempts uint64
}

// Totals reports the counts behind the node's Stats.
func (m *Metrics) Totals() Totals {
	return Totals{Entries: m.entries.Load(), Commands: m.commands.Load(), DroppedProposals: m.drops.Load(),
		MissedTransferAttempts: m.missedAttempts.Load()}
}

// PeerWrites counts the writes other nodes asked through the peer port.
func (m *Metrics) PeerWrites() *prometheus.CounterVec { return m.peerWrites }

// PeerAuditLost counts the audit records of peer writes that could not be
// written.
func (m *Metrics) PeerAuditLost() prometheus.Counter { return m.peerAuditLost }

// PeerCalled records a peer RPC call (peer.Client.OnCall).
func (m *Metrics) PeerCalled(path string, took time.Duration, err error) {
	m.lat.peerCalled(path, took, err)
}

// Forwarded records one forward hop (dispatch.Config.Forwarded).
func (m *Metrics) Forwarded(took time.Duration, err error) { m.lat.forwarded(took, err) }

// SnapshotChunk records a snapshot chunk the Raft transport moved.
func (m *Metrics) SnapshotChunk(sent bool, n int) { m.lat.snapshotChunk(sent, n) }

// LogSaved records a save of Raft state that reached the disk.
func (m *Metrics) LogSaved(took time.Duration) { m.lat.logSave.Observe(took.Seconds()) }

// LeaderChanged counts one leader event of a replica (leaderEvents).
func (m *Metrics) LeaderChanged(shard, replica, leader, term uint64) {
	m.leaders.observe(shard, replica, leader, term)
}

// UseNodeHost lets the Raft collector read nh, once it runs.
func (m *Metrics) UseNodeHost(nh *dragonboat.NodeHost) { m.raft.nh.Store(nh) }

// StopRaft ends the Raft collector's reading of the NodeHost: called
// before it closes (a scrape in progress is waited for).
func (m *Metrics) StopRaft() { m.raft.stop() }
