package cluster

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/balance"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/netguard"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// DefaultApplyWorkers is Config.ApplyWorkers' default.
const DefaultApplyWorkers = 4

// Config describes one node. Start fills defaults (EnsureDefaults) and
// refuses what Validate rejects.
type Config struct {
	NodeID  slotstore.NodeID
	DataDir string // raft/ (dragonboat) and store/ (Pebble) live under it
	// BackupDir is where this node writes the backups it is asked for, one
	// directory each (default DataDir/backups).
	BackupDir string
	RaftAddr  string // host:port for Raft traffic; must stay the same across restarts
	APIAddr   string // advertised HTTP API address
	PeerAddr  string // advertised peer RPC address

	// ClusterSecret authenticates peer RPC: every request carries it and
	// every node refuses requests without it. Required when PeerAddr is set.
	ClusterSecret string
	// GenerateSecret, with no ClusterSecret, authenticates peer RPC with a
	// secret generated at bootstrap instead (secret.go): replicated in the
	// controller state, kept in DataDir/peer-secret (mode 0600).
	GenerateSecret bool
	// AcceptedSecrets are accepted on peer RPC besides ClusterSecret (and
	// tried after a peer refuses it): earlier secrets during a rotation
	// (peer.Secret.Accept; at most peer.MaxAcceptedSecrets).
	AcceptedSecrets []string
	// TLS, when its files are set (all three or none), makes Raft and peer
	// RPC mutual TLS against one CA (tls.go).
	TLS peer.TLSConfig
	// JoinAddr, for a node that is not a founding member, is the API address
	// (host:port) of any node of the running cluster to register through:
	// over HTTPS against the cluster's CA when TLS is on (the nodes serve
	// their API with their node certificates), else plain HTTP.
	JoinAddr string
	// JoinToken is the bearer token (admin role) the registration carries
	// when the cluster's API requires tokens.
	JoinToken string
	// MaxPeerInFlight bounds requests in flight to one peer, and (×4) the
	// requests a node serves for all peers at once; past it: busy (default 256).
	MaxPeerInFlight int
	// MaxForwardHops bounds how many leader hints a forwarded request follows (default 3).
	MaxForwardHops int
	// ForwardHopTimeout bounds one forward to a leader, within the
	// caller's deadline (default: two election timeouts, at least 1s): a
	// leader cut off by the network hangs instead of refusing.
	ForwardHopTimeout time.Duration
	// ForwardMoveGrace is how long a forwarded write already with the old
	// leader may still be answered by it once another node is known to lead
	// (default: four ticks, at least 100ms): an old leader that is alive
	// answers at once, one cut off never does.
	ForwardMoveGrace time.Duration
	// LeaderWait bounds how long a write waits, in all, for a group
	// without a reachable leader to get one (default: four election
	// timeouts, at least 2s); past it the write is refused route_not_ready.
	LeaderWait time.Duration

	// InitialMembers are the founding nodes (this one included) of a new
	// cluster. Ignored once the node has joined a cluster.
	InitialMembers    []controller.Node
	ClusterID         string // default "slotmeta"
	GroupCount        int    // slot groups at bootstrap (default: one per initial member)
	ReplicationFactor int    // replicas per group, capped by the node count (default 3)
	DeploymentID      uint64 // isolates clusters on one network (default 1)

	// Raft timing: RTT is the tick; elections take ElectionRTT..2×ElectionRTT ticks.
	RTT                time.Duration // default 100ms (ADR 0018)
	ElectionRTT        uint64        // default 5
	HeartbeatRTT       uint64        // default 1
	SnapshotEntries    uint64        // default 10000
	CompactionOverhead uint64        // default 5000
	MaxInMemLogSize    uint64        // default 64 MiB
	// RaftWorkers is the number of Raft step workers and log shards
	// (engine.go). Groups on one worker share a log fsync. Fixed when the
	// data directory is created (default raftlog.DefaultWorkers: one per four
	// cores, 1..8); 0 takes the directory's count.
	RaftWorkers int
	// ApplyWorkers is the number of dragonboat's commit workers and of its
	// apply workers (engine.go: each a goroutine that, besides the work it
	// is woken for, visits its share of the replicas every 200 ms). The
	// engine's default is 16 of each; two cores need few (issue 31: idle
	// groups). Default 4, at most 16.
	ApplyWorkers int

	// ObserveInterval is how often the controller leader collects status
	// reports and reconciles (default 1s; negative: never by itself — tests
	// drive ObserveOnce and ReconcileOnce with their own clock).
	ObserveInterval time.Duration
	// ManualPin is how long an operator's manual replica move, preferred
	// leader, split, merge or slot migration pins the groups it names:
	// the balancer plans nothing for them but drains until then (default
	// an hour; negative: no pins).
	ManualPin time.Duration
	// HighWaterInterval is how often the controller leader records the
	// highest applied index it saw per group, when it rose (default 10s;
	// leader.DefaultHighWaterInterval): what a lost-quorum recovery
	// reports as lost survives a change of controller leader.
	HighWaterInterval time.Duration
	// HistoryStep is the step of the node's history and of the controller
	// leader's heat-map columns, the console's charts (default 10s;
	// package history): an hour of points, half an hour of columns.
	HistoryStep time.Duration
	// ProjectInterval is how often a node drains the subscriber → membership
	// outbox of the groups it leads (default 200ms; negative: never — tests
	// use it to stop between the channel-side commit and the projection).
	ProjectInterval time.Duration
	// UnreachableAfter: a node whose latest status report is older is
	// unreachable (default 3 × ObserveInterval).
	UnreachableAfter time.Duration
	// DisableHashSlotMoves refuses the tasks that move hash slots between
	// groups (migrations, splits, merges): a switch for operators who want
	// none. Moves are live and on by default.
	DisableHashSlotMoves bool
	// DisableLeaseReads makes every linearizable read run a ReadIndex
	// round, on the leader too. By default a group's leader answers them
	// from its own state for a lease after a round confirmed it
	// (propose/lease.go), for no longer than the shortest Raft timing the
	// group's nodes reported allows (timing.go). Restarted replicas wait
	// out a lease either way, so nodes may differ in this switch.
	DisableLeaseReads bool
	// DisableQuiesce keeps every slot group's heartbeats going. By default
	// dragonboat quiesces idle slot groups: no heartbeats after ten election
	// timeouts without traffic (256 idle groups: 3 % of a core a node
	// instead of 13 %; ADR 0013). A quiesced follower never times out by
	// itself, so a group whose leader cannot be reached is woken
	// (package waker). The controller group never quiesces.
	DisableQuiesce bool
	// Balancer tunes the balancer (package controller/balance; zero values
	// are its defaults). DisableBalancer turns it off on this node (it then
	// never balances while it leads the controller; operators pause it
	// cluster-wide through the API instead). BalanceInterval is how often
	// the controller leader plans (default 5s; negative: never by itself —
	// tests drive BalanceOnce).
	Balancer        balance.Config
	DisableBalancer bool
	BalanceInterval time.Duration
	// TaskPhaseTimeout fails a task whose phase has not completed for this
	// long (default 2m).
	TaskPhaseTimeout time.Duration
	// Leadership holds the safety thresholds of transfers and of the
	// preferred-leader reconciler.
	Leadership policy.Leadership

	Proposer propose.Config
	Store    store.Options

	// Watch bounds the node's watchers (package watch: how many, how far
	// one may fall behind). WatchRecords and WatchAge bound the change log
	// each hash slot keeps (defaults fsm.DefaultWatchRecords,
	// fsm.DefaultWatchAge); they decide which rows exist, so every node of
	// a cluster must use the same values.
	Watch        watch.Config
	WatchRecords int
	WatchAge     time.Duration

	// CheckBytesPerSecond paces the hashing of state checks on this node
	// (default digests.DefaultBytesPerSecond); CheckEvery is how often the
	// controller leader checks each group in the background (default
	// leader.DefaultCheckEvery, an hour; negative: only when an operator
	// asks).
	CheckBytesPerSecond int
	CheckEvery          time.Duration

	// RequestTimeout bounds the node's own background Raft calls (default 3s).
	RequestTimeout time.Duration

	// DiskReserve is the space (bytes) the node keeps free in its data
	// directory's filesystem: under it the node refuses the writes it
	// would lead (package diskguard; default diskguard.DefaultReserve,
	// negative: no guard). DiskCheckInterval is how often it measures
	// (default a second).
	DiskReserve       int64
	DiskCheckInterval time.Duration

	// Version is the release line the node reports it runs (default
	// clusterversion.Binary). Only tests set another: an older one holds
	// the cluster version back as a node of that release would.
	Version slotstore.Version

	// Fault-injection hooks for in-process test clusters (package
	// slotstore/faults); nil in production.
	RaftTransport     config.TransportFactory                   // replaces dragonboat's default transport
	RaftFS            config.IFS                                // dragonboat's file system (log, snapshots)
	WrapPeerTransport func(http.RoundTripper) http.RoundTripper // wraps the peer RPC client's transport

	// Conns bounds the connections the peer and Raft ports hold (default:
	// netguard.ProcessBudget(), from the descriptor limit); ConnMetrics,
	// when set, exports their stats (one per process: the API's listener is
	// added to the same one).
	Conns       netguard.Budget
	ConnMetrics *netguard.Collector

	// LastCrash is the first line of the previous process's crash output
	// on this data directory ("" none; cmd/server keeps it,
	// internal/crashlog): the reason given for a replica the crash-loop
	// breaker does not start again (replicas/startmarks.go).
	LastCrash string

	Registerer prometheus.Registerer // default: a private registry
	Logger     *slog.Logger          // default: discard
	Now        func() time.Time      // default: time.Now
}

// DefaultGroupCount is the number of slot groups a cluster of members
// founding nodes starts with when none is configured: one group per full
// set of replicas (members ÷ replication factor, at least 1), so that every
// founding node holds one replica. Each further group on the same nodes only
// adds Raft rounds, log syncs and smaller batches of its own: on 3 nodes, 3
// groups cost ~50% more CPU per write than 1 (ADR 0005). Clusters planned
// to grow choose more with --groups.
func DefaultGroupCount(members, replicationFactor int) int {
	rf := max(1, min(replicationFactor, members))
	return min(max(1, members/rf), slotstore.HashSlotCount)
}

// EnsureDefaults fills zero fields.
func (c *Config) EnsureDefaults() {
	c.ClusterID = cmp.Or(c.ClusterID, "slotmeta")
	if c.BackupDir == "" && c.DataDir != "" {
		c.BackupDir = filepath.Join(c.DataDir, "backups")
	}
	c.ReplicationFactor = cmp.Or(c.ReplicationFactor, 3)
	c.GroupCount = cmp.Or(c.GroupCount, DefaultGroupCount(len(c.InitialMembers), c.ReplicationFactor))
	c.DeploymentID = cmp.Or(c.DeploymentID, 1)
	c.RTT = cmp.Or(c.RTT, 100*time.Millisecond) // ADR 0018
	c.ElectionRTT = cmp.Or(c.ElectionRTT, 5)
	c.HeartbeatRTT = cmp.Or(c.HeartbeatRTT, 1)
	c.SnapshotEntries = cmp.Or(c.SnapshotEntries, 10000)
	c.CompactionOverhead = cmp.Or(c.CompactionOverhead, 5000)
	c.MaxInMemLogSize = cmp.Or(c.MaxInMemLogSize, 64<<20)
	c.MaxPeerInFlight = cmp.Or(c.MaxPeerInFlight, 256)
	c.MaxForwardHops = cmp.Or(c.MaxForwardHops, 3)
	c.ForwardHopTimeout = cmp.Or(c.ForwardHopTimeout, max(2*c.electionTimeout(), time.Second))
	c.ForwardMoveGrace = cmp.Or(c.ForwardMoveGrace, max(4*c.RTT, 100*time.Millisecond))
	c.LeaderWait = cmp.Or(c.LeaderWait, max(4*c.electionTimeout(), 2*time.Second))
	c.ObserveInterval = cmp.Or(c.ObserveInterval, time.Second)
	c.ManualPin = cmp.Or(c.ManualPin, time.Hour)
	c.Leadership.ReachableWithin = cmp.Or(c.Leadership.ReachableWithin, c.electionTimeout())
	if c.UnreachableAfter == 0 {
		c.UnreachableAfter = 3 * c.ObserveInterval
		if c.ObserveInterval < 0 {
			c.UnreachableAfter = 3 * time.Second
		}
	}
	c.Leadership.EnsureDefaults()
	c.ProjectInterval = cmp.Or(c.ProjectInterval, 200*time.Millisecond)
	c.BalanceInterval = cmp.Or(c.BalanceInterval, 5*time.Second)
	c.ApplyWorkers = cmp.Or(c.ApplyWorkers, DefaultApplyWorkers)
	c.TaskPhaseTimeout = cmp.Or(c.TaskPhaseTimeout, 2*time.Minute)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, 3*time.Second)
	c.Version = cmp.Or(c.Version, clusterversion.Binary)
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Conns.Limit == 0 {
		c.Conns = netguard.ProcessBudget()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Proposer.EnsureDefaults()
}

// electionTimeout is the shortest election timeout: ElectionRTT ticks.
func (c *Config) electionTimeout() time.Duration { return time.Duration(c.ElectionRTT) * c.RTT }

// leaseDuration is how long a leader's confirmed leadership answers reads
// (propose.LeaseDuration), also the wait of a restarted replica.
func (c *Config) leaseDuration() time.Duration { return propose.LeaseDuration(c.RTT, c.ElectionRTT) }

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	if c.NodeID == 0 {
		return fmt.Errorf("cluster: node id must be positive")
	}
	if c.DataDir == "" {
		return fmt.Errorf("cluster: data dir is required")
	}
	if c.RaftAddr == "" {
		return fmt.Errorf("cluster: raft address is required")
	}
	if err := c.Watch.Validate(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if c.HistoryStep < 0 {
		return fmt.Errorf("cluster: HistoryStep %v is negative", c.HistoryStep)
	}
	if c.CheckBytesPerSecond < 0 {
		return fmt.Errorf("cluster: negative check pace %d bytes/s", c.CheckBytesPerSecond)
	}
	if c.WatchRecords < 0 || c.WatchAge < 0 {
		return fmt.Errorf("cluster: negative change-log retention (%d records, %v)", c.WatchRecords, c.WatchAge)
	}
	if c.GroupCount < 1 || c.GroupCount > slotstore.HashSlotCount {
		return fmt.Errorf("cluster: group count %d outside 1..%d", c.GroupCount, slotstore.HashSlotCount)
	}
	if c.ReplicationFactor < 1 || c.ReplicationFactor > 7 {
		return fmt.Errorf("cluster: replication factor %d outside 1..7", c.ReplicationFactor)
	}
	if c.RTT < time.Millisecond {
		return fmt.Errorf("cluster: rtt %v under 1ms", c.RTT)
	}
	if c.ElectionRTT <= 2*c.HeartbeatRTT {
		return fmt.Errorf("cluster: election rtt %d must exceed twice the heartbeat rtt %d", c.ElectionRTT, c.HeartbeatRTT)
	}
	if c.RequestTimeout < 2*c.RTT {
		return fmt.Errorf("cluster: request timeout %v under two ticks", c.RequestTimeout)
	}
	seen := map[slotstore.NodeID]bool{}
	for _, m := range c.InitialMembers {
		if m.ID == 0 || seen[m.ID] || m.RaftAddr == "" {
			return fmt.Errorf("cluster: initial member %d is zero, repeated or has no raft address", m.ID)
		}
		seen[m.ID] = true
	}
	if len(c.AcceptedSecrets) > peer.MaxAcceptedSecrets {
		return fmt.Errorf("cluster: %d accepted secrets, at most %d", len(c.AcceptedSecrets), peer.MaxAcceptedSecrets)
	}
	if c.ClusterSecret != "" && c.GenerateSecret {
		return fmt.Errorf("cluster: a cluster secret and a generated one exclude each other")
	}
	if c.PeerAddr != "" && c.ClusterSecret == "" && !c.GenerateSecret {
		return fmt.Errorf("cluster: a cluster secret is required to serve peer RPC")
	}
	if err := c.TLS.Validate(); err != nil {
		return err
	}
	if c.ApplyWorkers < 0 || c.ApplyWorkers > 16 {
		return fmt.Errorf("cluster: apply workers %d outside 1..16", c.ApplyWorkers)
	}
	if c.RaftWorkers < 0 || c.RaftWorkers > raftlog.MaxWorkers {
		return fmt.Errorf("cluster: raft workers %d outside 1..%d", c.RaftWorkers, raftlog.MaxWorkers)
	}
	if c.MaxPeerInFlight < 1 || c.MaxForwardHops < 1 || c.MaxForwardHops > 10 {
		return fmt.Errorf("cluster: peer in-flight bound %d and forward hops %d must be positive (hops ≤ 10)", c.MaxPeerInFlight, c.MaxForwardHops)
	}
	if len(c.InitialMembers) > 0 && c.JoinAddr != "" {
		return fmt.Errorf("cluster: a node either founds a cluster (initial members) or joins one, not both")
	}
	if len(c.InitialMembers) > 0 && !seen[c.NodeID] {
		return fmt.Errorf("cluster: node %d is not among the initial members", c.NodeID)
	}
	return c.Proposer.Validate()
}
