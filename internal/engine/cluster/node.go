// Package cluster is one slotmeta node: the facade that wires a dragonboat
// NodeHost, the node's Pebble store and the controller replica to the leaf
// packages that each own one concern, and offers the node to the API.
//
//	routing      the routing snapshot and leader changes
//	raftlog      the Raft log (commit-only saves not synced) and step workers
//	raftnet      the Raft transport, with who this node last heard from
//	replicas     the slot-group replicas on the node: start, stop, leftovers
//	propose      proposers and ReadIndex batching per replica
//	dispatch     commands and queries to the replica that serves them
//	peer         node-to-node RPC: client, server framing, forwarding, TLS
//	controller/leader   what the controller leader runs: observe, reconcile,
//	                    checked transfers, tasks, the balancer
//	controller/policy   transfer checks, reconciler decisions, observations
//	controller/tasks    replica moves and hash-slot migrations, step by step
//	projector    the subscriber → membership outbox
//
// What stays here is what needs all of them, one small type per concern
// beside the Node, which keeps the lifecycle and the data path's entry
// (datapath.go): the controller replica — starting it, the node's role in
// it, joining, proposing (controllerReplica, join.go); following the
// controller's state (follower, follow.go); leader transfers of the groups
// this node leads (transferer, transfer.go); the peer endpoints the node answers itself (peerAPI,
// peerapi.go); the operator's operations (operator, operator.go and
// tasks.go); the adapters the leaf packages see (hosts.go); status reports,
// security, and the wiring of the metrics (package nodemetrics). A test holds every type, Node included, to at
// most 40 methods (methodcap_test.go at the repository root).
//
// Lifecycle. Start opens the store (migrating it), starts the NodeHost and
// the controller replica, and returns; a reconcile loop then proposes the
// cluster's bootstrap (founding members only, idempotent), follows the
// controller's state — publishing each new HashToGroup table and config
// epoch to the router and starting the slot replicas this node should hold
// — and refreshes live leaders. Close stops the loops, the proposers
// (answering everything queued), the NodeHost and then the store, in that
// order.
//
// Concurrency. Propose and Read are safe for concurrent use and never block
// on the reconcile loop: they read the immutable routing snapshot and the
// copy-on-write set of local replicas. Leader events arrive on dragonboat's
// event goroutine and only publish router and disruption updates. The
// controller leader's loop (package leader), the waker's worker and the
// projector's loop are owned by the Node and end with Close.
package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	dblogger "github.com/lni/dragonboat/v4/logger"
	"github.com/lni/dragonboat/v4/raftio"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/backupjob"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/leader"
	"github.com/slotmeta/slotmeta/internal/engine/ctrlrecovery"
	"github.com/slotmeta/slotmeta/internal/engine/digests"
	"github.com/slotmeta/slotmeta/internal/engine/dispatch"
	"github.com/slotmeta/slotmeta/internal/engine/heat"
	"github.com/slotmeta/slotmeta/internal/engine/history"
	"github.com/slotmeta/slotmeta/internal/engine/nodemetrics"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/engine/projector"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/engine/raftnet"
	"github.com/slotmeta/slotmeta/internal/engine/replicas"
	"github.com/slotmeta/slotmeta/internal/engine/restore"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/engine/waker"
	"github.com/slotmeta/slotmeta/internal/netguard"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// Node is a running slotmeta node.
type Node struct {
	cfg     Config
	db      *store.DB
	nh      *dragonboat.NodeHost
	logdb   *raftlog.Factory // the Raft log (package raftlog)
	router  *routing.Router
	metrics *nodemetrics.Metrics

	ctrl       atomic.Pointer[controller.State]
	ctrlDigest digestCache   // the latest controller state's digest (controllerdigest.go)
	disk       diskWatch     // the data directory's free space (disk.go)
	ctrlLeader atomic.Uint64 // controller leader node id (0: unknown)
	ctrlSM     *controller.StateMachine

	replicas *replicas.Set     // the slot-group replicas on this node
	digests  *digests.Registry // hashes the replicas' state for state checks (checks.go)
	backups  *backupjob.Runner
	hub      *watch.Hub // the change feed's subscribers (Watches)

	secret  *peer.Secret  // peer RPC's cluster secret, rotatable (RotateSecret)
	secrets *secretKeeper // the given or generated secret (secret.go)
	peerTLS *peer.TLS     // nil without TLS; reloaded by ReloadTLS
	peers   *peer.Client
	peerSrv *http.Server
	peerRPC *peer.Server // its handler; Close ends the peer streams Shutdown does not see
	// peerServed is closed when peerSrv's Serve returned (closePeer waits).
	peerServed chan struct{}
	peerLn     net.Listener

	heard      *raftnet.Heard                  // when each replica was last heard from over Raft
	members    memberships                     // led groups' memberships by config change index (status reports)
	heat       *heat.Counters                  // reads and writes this node's API served, per hash slot
	seed       *restore.Seed                   // the restore this data directory was laid out by (nil: none)
	recovery   *recoverer                      // lost-quorum recoveries through this node (recovery.go)
	removed    atomic.Pointer[map[string]bool] // Raft addresses of removed nodes (refused)
	recovered  *ctrlrecovery.Record            // this node's controller recovery (package ctrlrecovery), or nil
	minVersion slotstore.Version               // the cluster version the data directory records (minversion.go; the follower loop's own)
	wakes      *waker.Waker                    // wakes quiesced groups
	history    *history.Recorder               // the node's vital signs, for the console's charts
	ctl        controllerReplica               // the node's controller replica: start, role, proposals (join.go)
	follow     follower                        // follows the controller's state (follow.go)
	xfer       transferer                      // leader transfers of the groups this node leads (transfer.go)
	peerSide   peerAPI                         // the peer endpoints the node answers itself (peerapi.go)
	leader     *leader.Leader                  // the controller leader's work: observe, reconcile, tasks, balance
	projector  *projector.Projector            // drains the outboxes of the groups this node leads
	dispatch   *dispatch.Dispatcher            // routes commands and queries to the replica that serves them
	peerWrites *peerWrites                     // attributes what other nodes ask through the peer port (peerwrites.go)
	events     systemEvents                    // dragonboat system events, counted (systemevents.go)
	bg         sync.WaitGroup                  // background goroutines besides the reconcile loop

	// followGate, set only by tests, holds the reconcile loop before it
	// starts or stops replicas until the channel closes (a slow round).
	followGate atomic.Pointer[chan struct{}]

	kick chan struct{} // wakes the reconcile loop (cap 1)
	// life ends when Close begins: every background loop's work derives
	// its context from it, so Close does not wait out a request timeout.
	life    context.Context
	endLife context.CancelFunc
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

var quietOnce sync.Once

// quietDragonboat turns dragonboat's chatty package loggers down. They are
// process-global, so it happens once.
func quietDragonboat() {
	quietOnce.Do(func() {
		for _, p := range []string{"raft", "rsm", "transport", "dragonboat", "logdb", "config", "raftpb", "settings", "grpc", "registry", "tan", "vfs"} {
			dblogger.GetLogger(p).SetLevel(dblogger.ERROR)
		}
	})
}

// Start opens the node's store and NodeHost and starts its replicas.
func Start(cfg Config) (*Node, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	leaseReads := cfg.leaseDuration()
	if cfg.DisableLeaseReads {
		leaseReads = 0
	}
	// Before anything in the data directory is opened or written: data a
	// newer cluster version wrote is not for this binary (minversion.go).
	minVersion, err := checkMinVersion(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	quietDragonboat()
	peerTLS, err := cfg.TLS.Load()
	if err != nil {
		return nil, err
	}
	// The data directory holds the Raft log and snapshots, where the
	// generated cluster secret is too: only the node's user reads it.
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: data directory: %w", err)
	}
	seed, err := readRestoreSeed(&cfg)
	if err != nil {
		return nil, err
	}
	recovered, err := ctrlrecovery.ReadRecord(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(filepath.Join(cfg.DataDir, "store"), &cfg.Store)
	if err != nil {
		return nil, err
	}
	// What Start opened, closed in reverse should a later step fail; once
	// it returns the node, Close owns all of it.
	var undo closers
	started := false
	defer func() {
		if !started {
			undo.unwind()
		}
	}()
	undo.push(func() { _ = db.Close() })
	secrets, err := newSecretKeeper(cfg)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, db: db, logdb: &raftlog.Factory{}, router: routing.NewRouter(), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
		secret: secrets.secret, secrets: secrets,
		heard: raftnet.NewHeard(), heat: &heat.Counters{}, seed: seed, recovered: recovered, minVersion: minVersion}
	n.ctl, n.follow, n.peerSide = controllerReplica{n}, follower{n}, peerAPI{n}
	n.follow.noteRemoved(controller.NewState()) // a recovery's lost nodes, fenced from the start
	n.secret.Accept(cfg.AcceptedSecrets)
	n.peers = peer.NewClient(n.secret, cfg.MaxPeerInFlight)
	n.peerTLS = peerTLS
	n.life, n.endLife = context.WithCancel(context.Background())
	undo.push(n.endLife)
	n.peers.UseTLS(peerTLS)
	n.peers.From(cfg.NodeID)
	if cfg.WrapPeerTransport != nil {
		n.peers.WrapTransport(cfg.WrapPeerTransport)
	}
	n.ctrl.Store(controller.NewState())
	n.metrics, err = newMetrics(n)
	if err != nil {
		return nil, err
	}
	undo.push(n.metrics.Unregister) // a Start retried on a shared registry registers again
	n.peers.OnCall(n.metrics.PeerCalled)
	n.logdb.Saved = n.metrics.LogSaved
	gatherer, _ := cfg.Registerer.(prometheus.Gatherer) // a registry is both
	n.history = history.New(history.Config{Node: cfg.NodeID, Step: cfg.HistoryStep, Now: cfg.Now, Gatherer: gatherer, Ops: n.heat.Totals})
	raftDir := filepath.Join(cfg.DataDir, "raft")
	workers, err := raftlog.ResolveWorkers(cfg.DataDir, cfg.RaftWorkers)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(raftDir, 0o755); err != nil {
		return nil, err
	}
	nhc := nodeHostConfig(&cfg, raftDir, workers, n.logdb)
	nhc.RaftEventListener = n
	nhc.SystemEventListener = &n.events // counts snapshots and Raft connections (systemevents.go)
	// dragonboat's TCP transport (or the test's), recording who we hear
	// from, and storing nothing others send while the disk is full.
	n.disk = newDiskWatch(n)
	tr := raftnet.Transport{Inner: cfg.RaftTransport, Heard: n.heard, Refuse: n.refusesRaftFrom, Sending: n.logdb.Sending, SnapshotBytes: n.metrics.SnapshotChunk,
		Hold: n.disk.g.Full, Held: n.metrics.HeldByDisk,
		Bounds: raftnet.Bounds{MaxConns: cfg.Conns.Raft.Max, MaxPerSource: cfg.Conns.Raft.PerSource, Listening: n.guarded}}
	if peerTLS != nil {
		// The Raft port's handshakes read the certificate reloaded in
		// place, like peer RPC's (ReloadTLS).
		tr.ServerTLS = peerTLS.Server
	}
	nhc.Expert.TransportFactory = tr
	if n.hub, err = watch.NewHub(cfg.Watch); err != nil { // validated: cannot fail
		return nil, fmt.Errorf("cluster: %w", err)
	}
	undo.push(n.hub.Close)
	nh, err := dragonboat.NewNodeHost(nhc)
	if err != nil {
		return nil, fmt.Errorf("cluster: start nodehost: %w", err)
	}
	n.metrics.UseNodeHost(nh)
	n.nh = nh
	// The leaf packages, over the NodeHost (package doc).
	n.digests = digests.New(digests.Config{BytesPerSecond: cfg.CheckBytesPerSecond, Logger: cfg.Logger})
	// Pushed in this order so that the NodeHost closes before the digests:
	// the engine hands them no snapshot any more (as Close does).
	undo.push(n.digests.Close)
	undo.push(nh.Close)
	undo.push(n.metrics.StopRaft) // before the NodeHost closes: no scrape reads it from here on
	n.replicas = replicas.New(replicas.Config{Check: n.digests.Start, FenceMarks: filepath.Join(cfg.DataDir, "replica-fences"), NodeID: cfg.NodeID, NH: nh, DB: db, Router: n.router, ShardConfig: n.shardConfig,
		Proposer: cfg.Proposer, RequestTimeout: cfg.RequestTimeout, Controller: n.ctrl.Load,
		Changes: n.hub, WatchRecords: cfg.WatchRecords, WatchAge: cfg.WatchAge,
		Applied: n.metrics.Applied, Batches: n.metrics.BatchObserver, DroppedProposal: n.metrics.DroppedProposal,
		Logger: cfg.Logger, Settle: 4 * cfg.electionTimeout(), AwayGrace: 2 * cfg.electionTimeout(),
		LeaseDuration: leaseReads, LeaseHold: 10 * cfg.electionTimeout(),
		StartWait:       cfg.leaseDuration(),
		RemoteReadIndex: n.remoteReadIndex(leaseReads > 0), RemoteBudget: min(cfg.electionTimeout(), cfg.RequestTimeout/2),
		LeaseLimit: func(g slotstore.GroupID) time.Duration { return leaseLimit(n.ctrl.Load(), g) }, Log: n.logdb,
		ReadPath: n.metrics.ReadPath, StartMarks: filepath.Join(cfg.DataDir, "replica-starts"), LastCrash: cfg.LastCrash})
	n.wakes = waker.New(waker.Config{Off: cfg.DisableQuiesce, Self: cfg.NodeID, Life: n.life, Router: n.router, Controller: n.ctrl.Load,
		Peers: n.peers, Addr: func(id slotstore.NodeID) string { return n.dispatch.PeerAddrOf(id) },
		Touch: func(g slotstore.GroupID) {
			if lg := n.replicas.Get(g); lg != nil && lg.Open() {
				_, _ = n.nh.ReadIndex(controller.ShardOf(g), waker.Timeout)
			}
		}})
	n.xfer = transferer{cfg: &n.cfg, nh: nh, ctrl: n.ctrl.Load, peerAddr: func(id slotstore.NodeID) string { return n.dispatch.PeerAddrOf(id) },
		peers: n.peers, replicas: n.replicas, router: n.router, heard: n.heard, wakes: n.wakes, attempt: n.metrics.TransferAttempt}
	n.peerWrites = &peerWrites{nodes: n.ctrl.Load, counted: n.metrics.PeerWrites(), lost: n.metrics.PeerAuditLost(), audit: n.Audit, log: cfg.Logger}
	n.dispatch = dispatch.New(dispatch.Config{NodeID: cfg.NodeID, Router: n.router, Local: localReplicas{replicas: n.replicas, ctrl: n.ctrl.Load, heard: n.heard}, Peers: n.peers,
		Controller: n.ctrl.Load, MaxForwardHops: cfg.MaxForwardHops, ForwardHopTimeout: cfg.ForwardHopTimeout,
		ForwardMoveGrace: cfg.ForwardMoveGrace, LeaderWait: cfg.LeaderWait, ElectionTimeout: cfg.electionTimeout(), Now: cfg.Now,
		Proposal: n.metrics.Proposal, LeaderMove: n.metrics.LeaderMove, Forwarded: n.metrics.Forwarded, Heat: n.heat, Wake: n.wakes.Unreached, ServedWrite: n.peerWrites.proposed,
		Refuse: n.disk.refuse, Behind: n.disk.g.Full})
	n.projector = projector.New(projector.Config{Node: projectHost{self: cfg.NodeID, router: n.router, replicas: n.replicas,
		readLocal: n.dispatch.ReadLocal, propose: n.Propose}, Interval: cfg.ProjectInterval,
		RoundTimeout: cfg.RequestTimeout, Backlog: n.metrics.Backlog, Logger: cfg.Logger})
	n.leader = leader.New(leader.Config{NodeID: cfg.NodeID, Host: leaderHost{n}, Peers: n.peers, Now: cfg.Now, Logger: cfg.Logger, Life: n.life,
		ObserveInterval: cfg.ObserveInterval, BalanceInterval: cfg.BalanceInterval, HighWaterInterval: cfg.HighWaterInterval, HeatStep: cfg.HistoryStep, RequestTimeout: cfg.RequestTimeout,
		UnreachableAfter: cfg.UnreachableAfter, TaskPhaseTimeout: cfg.TaskPhaseTimeout, Leadership: cfg.Leadership,
		Balancer: cfg.Balancer, DisableBalancer: cfg.DisableBalancer, DisableQuiesce: cfg.DisableQuiesce,
		DisableHashSlotMoves: cfg.DisableHashSlotMoves, BackoffSeed: uint64(cfg.NodeID)<<32 ^ uint64(time.Now().UnixNano()),
		ServedTransfer: func(ctx context.Context) { n.peerWrites.wrote(ctx, peerWriteTransfer) },
		Checks:         leaderHost{n}, CheckEvery: cfg.CheckEvery})
	n.backups = backupjob.New(backupjob.Config{Host: backupHostOf(n), Peers: n.peers, Root: cfg.BackupDir, Now: cfg.Now, Logger: cfg.Logger})
	n.recovery = &recoverer{n: n}
	if cfg.PeerAddr != "" {
		// Bounded: a connection that has not shown the cluster secret within
		// the grace is closed (peer.Server proves it on admission).
		gl, err := netguard.Listen(cfg.PeerAddr, netguard.Config{Name: "peer", MaxConns: cfg.Conns.Peer.Max,
			MaxPerSource: cfg.Conns.Peer.PerSource, Unproven: 10 * time.Second, Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("cluster: peer listener: %w", err)
		}
		n.guarded(gl)
		n.peerLn = peerTLS.Listener(gl)
		n.peerRPC = n.peerSide.peerHandler()
		n.peerSrv = &http.Server{Handler: n.peerRPC, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute,
			ErrorLog: peer.ErrorLog(cfg.Logger), ConnContext: netguard.ConnContext, ConnState: netguard.ConnState}
		n.peerServed = make(chan struct{})
		go func() {
			defer close(n.peerServed)
			_ = n.peerSrv.Serve(n.peerLn)
		}()
	}
	undo.push(n.closePeer)
	if seed != nil {
		if err := startRestoredLogs(nh, n.logdb, db, seed, cfg.Logger); err != nil {
			return nil, err
		}
	}
	restarted := nh.HasNodeInfo(controller.ShardID, uint64(cfg.NodeID))
	if err := n.ctl.startController(); err != nil {
		return nil, err
	}
	// The base of a controller recovery asks no one: the others are lost
	// or rejoin through it.
	if restarted && (recovered == nil || recovered.Rejoin) {
		if err := n.ctl.checkNotRemoved(5 * time.Second); err != nil {
			return nil, err
		}
	}
	started = true
	go n.follow.reconcileLoop()
	if recovered != nil && !recovered.Rejoin {
		n.bg.Add(1)
		go func() {
			defer n.bg.Done()
			n.ctl.recordControllerRecovery(recovered)
		}()
	}
	n.bg.Add(5)
	go func() {
		defer n.bg.Done()
		n.leader.Run(n.stop)
	}()
	go func() {
		defer n.bg.Done()
		n.disk.run(n.stop)
	}()
	go func() {
		defer n.bg.Done()
		n.history.Run(n.stop)
	}()
	go func() {
		defer n.bg.Done()
		n.wakes.Run(n.stop)
	}()
	go func() {
		defer n.bg.Done()
		n.projector.Run(n.life)
	}()
	return n, nil
}

// closers is a stack of what a constructor opened, to close in reverse
// when a later step fails (Start's unwinding).
type closers []func()

func (c *closers) push(f func()) { *c = append(*c, f) }

func (c closers) unwind() {
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
}

// guarded exports a bounded listener's stats.
func (n *Node) guarded(l *netguard.Listener) {
	if n.cfg.ConnMetrics != nil {
		n.cfg.ConnMetrics.Add(l)
	}
}

func (n *Node) closePeer() {
	if n.peerSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.peerSrv.Shutdown(ctx)
		n.peerRPC.Close()
		<-n.peerServed // Shutdown closed its listener: Serve has returned or is returning
	}
	n.peers.Close()
}

// nodeHostConfig is the NodeHost's configuration over the Raft data in
// raftDir (the node's, and an offline recovery's: RecoverController).
func nodeHostConfig(cfg *Config, raftDir string, workers int, logdb *raftlog.Factory) config.NodeHostConfig {
	nhc := config.NodeHostConfig{
		DeploymentID:   cfg.DeploymentID,
		NodeHostDir:    raftDir,
		RTTMillisecond: uint64(cfg.RTT / time.Millisecond),
		RaftAddress:    cfg.RaftAddr,
		MutualTLS:      cfg.TLS.Enabled(),
		CAFile:         cfg.TLS.CAFile,
		CertFile:       cfg.TLS.CertFile,
		KeyFile:        cfg.TLS.KeyFile,
		Expert:         raftlog.ExpertConfig(workers, cfg.ApplyWorkers, logdb),
	}
	if cfg.RaftFS != nil {
		nhc.Expert.FS = cfg.RaftFS
	}
	return nhc
}

func (n *Node) shardConfig(shard, replica uint64) config.Config {
	return shardConfig(&n.cfg, shard, replica)
}

// shardConfig is the configuration of replica of shard on the node cfg
// configures.
func shardConfig(cfg *Config, shard, replica uint64) config.Config {
	return config.Config{
		ShardID:             shard,
		ReplicaID:           replica,
		CheckQuorum:         true,
		PreVote:             true,
		ElectionRTT:         cfg.ElectionRTT,
		HeartbeatRTT:        cfg.HeartbeatRTT,
		SnapshotEntries:     cfg.SnapshotEntries,
		CompactionOverhead:  cfg.CompactionOverhead,
		OrderedConfigChange: true,
		MaxInMemLogSize:     cfg.MaxInMemLogSize,
		Quiesce:             !cfg.DisableQuiesce && shard != controller.ShardID,
	}
}

func (r controllerReplica) startController() error {
	replica := uint64(r.n.cfg.NodeID)
	r.n.ctrlSM = controller.NewStateMachine(func(s *controller.State) {
		r.n.ctrl.Store(s)
		r.n.secrets.adopt(s)
		r.n.follow.publishRoutes(s)
		r.n.follow.noteRemoved(s)
		r.n.poke()
	})
	create := func(uint64, uint64) sm.IStateMachine { return r.n.ctrlSM }
	cfg := r.n.shardConfig(controller.ShardID, replica)
	role, err := r.controllerRole()
	if err != nil {
		return err
	}
	cfg.IsNonVoting = role == ctrlrecovery.RoleNonVoting
	if r.n.nh.HasNodeInfo(controller.ShardID, replica) {
		// Restart: dragonboat has the membership; start with none, in the
		// role the replica had where its replay begins (raftlog/restart.go;
		// the role file says how the node joined, which agrees unless a
		// recovery rewrote the group). A non-voting member promoted since
		// starts non-voting and becomes the voter it is as it loads its
		// membership (internal/raft/raft.go: restoreRemotes, and addNode
		// for a promotion replayed from the log).
		if cfg.IsNonVoting, err = r.n.logdb.RestartsNonVoting(controller.ShardID, replica); err != nil {
			return fmt.Errorf("cluster: restart controller replica: %w", err)
		}
		if err := r.n.nh.StartReplica(nil, false, create, cfg); err != nil {
			return fmt.Errorf("cluster: restart controller replica: %w", err)
		}
		return nil
	}
	switch {
	case len(r.n.cfg.InitialMembers) > 0:
		members := map[uint64]dragonboat.Target{}
		for _, m := range r.n.cfg.InitialMembers {
			members[uint64(m.ID)] = m.RaftAddr
		}
		if err := r.setControllerRole(ctrlrecovery.RoleVoter); err != nil {
			return err
		}
		cfg.IsNonVoting = false
		return r.n.nh.StartReplica(members, false, create, cfg)
	case r.n.recovered != nil && r.n.recovered.Rejoin:
		// A survivor of a controller recovery: its replica's data was
		// removed; it joins the recovered group through the base.
		if err := r.register(r.n.recovered.JoinVia); err != nil {
			return err
		}
		if err := r.setControllerRole(ctrlrecovery.RoleNonVoting); err != nil {
			return err
		}
		cfg.IsNonVoting = true
		return r.n.nh.StartReplica(nil, true, create, cfg)
	case r.n.cfg.JoinAddr != "":
		if err := r.register(r.n.cfg.JoinAddr); err != nil {
			return err
		}
		if err := r.setControllerRole(ctrlrecovery.RoleNonVoting); err != nil {
			return err
		}
		cfg.IsNonVoting = true
		return r.n.nh.StartReplica(nil, true, create, cfg)
	}
	return fmt.Errorf("cluster: node %d has no cluster state, no initial members and nothing to join", r.n.cfg.NodeID)
}

// poke wakes the reconcile loop without blocking.
func (n *Node) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// Close stops the node: reconcile loop, proposers, NodeHost, then store.
func (n *Node) Close() error {
	var err error
	n.once.Do(func() {
		n.endLife()
		n.hub.Close()
		close(n.stop)
		<-n.done
		n.bg.Wait()
		n.backups.Close()
		n.closePeer()
		n.replicas.Close()
		n.metrics.StopRaft() // no scrape reads the NodeHost from here on
		n.nh.Close()
		n.digests.Close() // the engine hands it no snapshot any more
		n.metrics.Unregister()
		err = n.db.Close()
	})
	return err
}

// NodeID is this node's id.
func (n *Node) NodeID() slotstore.NodeID { return n.cfg.NodeID }

// Routes returns the current routing snapshot.
func (n *Node) Routes() *routing.Snapshot { return n.router.Load() }

// Controller returns a copy of the controller state as this node last applied it.
func (n *Node) Controller() *controller.State { return n.ctrl.Load() }

// ControllerLeader is the controller leader as this node sees it (0: unknown).
func (n *Node) ControllerLeader() slotstore.NodeID { return slotstore.NodeID(n.ctrlLeader.Load()) }

// Ready returns nil when the cluster is bootstrapped, every group has a live
// leader, and every replica this node should hold is running.
func (n *Node) Ready() error {
	st := n.ctrl.Load()
	if !st.Bootstrapped {
		return slotstore.Errorf(slotstore.CodeRouteNotReady, "cluster is not bootstrapped yet")
	}
	if why := n.disk.g.Reason(); why != "" {
		return slotstore.Errorf(slotstore.CodeNoSpace, "%s", why)
	}
	// A replica that failed to start here first: not ready — a rolling
	// restart must not go on to the next node with the group one replica
	// short — though the node serves its other groups (replicas/failures.go).
	for _, rf := range n.replicas.Failures() {
		if grp, ok := st.Groups[rf.Group]; ok && grp.Peers[n.cfg.NodeID] == rf.ReplicaID && rf.Fenced {
			return slotstore.Errorf(slotstore.CodeRouteNotReady,
				"replica %d of group %d is fenced here: %s; its other replicas serve the group; it is rebuilt when it is moved to another node (the balancer does, or an operator)",
				rf.ReplicaID, rf.Group, rf.Reason)
		}
		if grp, ok := st.Groups[rf.Group]; ok && grp.Peers[n.cfg.NodeID] == rf.ReplicaID {
			return slotstore.Errorf(slotstore.CodeRouteNotReady,
				"replica %d of group %d failed to start here (%d attempts): %s; its other replicas serve the group; move this replica to another node to rebuild it",
				rf.ReplicaID, rf.Group, rf.Attempts, rf.Reason)
		}
	}
	if ok, g := n.router.Load().Ready(); !ok {
		if g == 0 {
			return slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing table yet")
		}
		return slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", g)
	}
	for _, id := range st.GroupIDs() {
		r, want := st.Groups[id].Peers[n.cfg.NodeID]
		if !want {
			continue
		}
		if _, dead := st.Tombstoned(id, r); dead {
			continue // a recovery tombstoned it: it never runs here again
		}
		if !n.replicas.Get(id).Open() {
			return slotstore.Errorf(slotstore.CodeRouteNotReady, "replica of group %d is not running here yet", id)
		}
		// The router learns a new leader from dragonboat's event a moment
		// before the replica's own leader info says so, and a read through
		// a replica that knows no leader is refused: ready once both agree.
		if _, _, valid, err := n.nh.GetLeaderID(controller.ShardOf(id)); err == nil && !valid {
			return slotstore.Errorf(slotstore.CodeRouteNotReady, "the replica of group %d here knows no leader yet", id)
		}
	}
	return nil
}

// WaitReady polls Ready until it passes or ctx ends.
func (n *Node) WaitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		err := n.Ready()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: not ready: %w", err)
		case <-t.C:
		}
	}
}

// LeaderUpdated implements raftio.IRaftEventListener. It runs on
// dragonboat's event goroutine: publish and return.
func (n *Node) LeaderUpdated(info raftio.LeaderInfo) {
	n.metrics.LeaderChanged(info.ShardID, info.ReplicaID, info.LeaderID, info.Term)
	if info.ShardID == controller.ShardID {
		n.ctrlLeader.Store(info.LeaderID) // controller replica ids are node ids
		return
	}
	g, ok := controller.GroupOfShard(info.ShardID)
	if !ok {
		return
	}
	n.replicas.LeaderUpdated(info.ShardID, info.LeaderID)
	if info.LeaderID == 0 {
		n.router.SetLeader(g, 0, info.Term)
		return
	}
	if node, ok := n.ctrl.Load().NodeOfReplica(g, info.LeaderID); ok {
		n.router.SetLeader(g, node, info.Term)
	}
}
