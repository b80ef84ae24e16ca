// Package replicas keeps the slot-group replicas of one node: which ones
// run, starting and stopping them as the controller's committed state says,
// and clearing what earlier replicas left behind.
//
// Model. A node runs a replica of group g when the controller places one on
// it: as a desired peer, or as the learner of a running replica move (Want).
// Follow compares that with what runs and starts, stops or cleans up — it
// acts only on replicated state, never on local guesses. A new replica
// starts from nothing: what an earlier replica of the same group left on the
// node (its Raft log, the group's rows) is removed first, and only after a
// linearizable read of the controller's state confirms that no other replica
// of the group belongs here (a restarted node's own copy of that state may
// be older than what it acted on; ADR 0002). dragonboat refuses a new
// replica over a non-empty state machine by panicking. For the same reason
// no replica restarts from its own Raft state before one linearizable read
// of the controller's state in this process: a lost-quorum recovery may
// have tombstoned it meanwhile (recovery.go), and a tombstoned replica
// never runs again. Rows a restore or a recovery laid out for a replica
// (fsm.RestoredFor) are that replica's: it starts with a log that begins
// past them, and no other replica restarts over them.
//
// A replica the engine cannot start (an error, or a panic while it loads
// the replica) is recorded as failed and the node goes on without it
// (failures.go).
//
// Each running replica is a Replica: its state machine, its proposer, its
// ReadIndex batcher and its leader lease (ended by TransferAway; a
// replica waits out a lease after its process or its predecessor started,
// Config.StartWait). The set also remembers each replica's last disruption
// (restart, leadership lost without a transfer away, a long spell without
// a leader) for the leader-transfer gates (disruption.go).
//
// Concurrency contract. Get and All read an immutable copy-on-write map and
// may be called from any goroutine without blocking. Follow takes no lock:
// it must run on one goroutine, the node's reconcile loop (cluster's
// follower), and it is the only caller of Start and Stop, so that one loop
// is what keeps them from overlapping. The set's mutex only guards changes
// to the map and the stop times: Start holds it throughout, Stop only while
// it takes the replica out of the map and when it records the stop (the
// replica's stop and the removal of its data run outside it); Fence and
// PrepareRecovery, called on request goroutines, take it too.
// LeaderUpdated runs on dragonboat's event goroutine and only takes a short
// mutex. Close stops every proposer and batcher; the replicas themselves
// stop with the NodeHost.
package replicas

import (
	"context"
	"errors"
	"fmt"
	"github.com/cockroachdb/pebble/v2"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// Replica is one slot-group replica running on this node.
type Replica struct {
	Group     slotstore.GroupID
	ReplicaID uint64
	Proposer  *propose.Proposer
	Reads     *propose.ReadBatcher // shares ReadIndex rounds among linearizable reads
	Lease     *propose.Lease       // lets the leader answer linearizable reads without a round (lease.go)
	Leased    *propose.LeasedReadIndex
	sm        atomic.Pointer[fsm.StateMachine]
	nh        *dragonboat.NodeHost
	shard     uint64
}

// SM is the replica's state machine, nil until dragonboat has created it.
func (r *Replica) SM() *fsm.StateMachine { return r.sm.Load() }

// Open reports whether the replica's state machine exists (it can be read).
func (r *Replica) Open() bool { return r != nil && r.sm.Load() != nil }

// Config is what the set needs of its node.
type Config struct {
	NodeID         slotstore.NodeID
	NH             *dragonboat.NodeHost
	DB             *store.DB
	Router         *routing.Router
	ShardConfig    func(shard, replica uint64) config.Config
	Proposer       propose.Config
	RequestTimeout time.Duration
	// Controller is the node's copy of the controller state.
	Controller func() *controller.State
	// Changes receives the changes each replica numbered, once committed
	// (fsm.Config.Changes).
	Changes watch.Publisher
	// Check receives a store snapshot for each state check a replica
	// applies (fsm.Config.OnCheck: it owns the snapshot, must not block).
	Check func(g slotstore.GroupID, index uint64, ids []uint64, atMs int64, snap *pebble.Snapshot)
	// WatchRecords and WatchAge bound each hash slot's change log
	// (fsm.Config; the same on every node).
	WatchRecords int
	WatchAge     time.Duration
	// Metrics hooks.
	Applied           func(g slotstore.GroupID, index uint64, took time.Duration)
	Batches           func(g slotstore.GroupID) propose.BatchObserver
	DroppedProposal   func()
	Logger            *slog.Logger
	Settle, AwayGrace time.Duration // of the disruption tracking (disruption.go)
	// LeaseDuration is how long a confirmed leadership serves reads
	// without a round (0: never; propose.LeaseDuration); LeaseHold how long
	// a transfer away holds off new leases (propose.Lease.Revoke).
	LeaseDuration, LeaseHold time.Duration
	// StartWait keeps a replica from voting while a lease it may have
	// acknowledged still runs (propose/lease.go): no replica starts within
	// StartWait (a lease) of New — called once the NodeHost runs — nor of
	// the same group's replica stopping in this process. Set whether or not
	// the node serves leases itself.
	StartWait time.Duration
	// RemoteReadIndex asks node, which leads g, for the index a read must
	// have applied (peer RPC; nil: followers run ReadIndex rounds), within
	// RemoteBudget.
	RemoteReadIndex func(ctx context.Context, g slotstore.GroupID, node slotstore.NodeID) (uint64, error)
	RemoteBudget    time.Duration
	// LeaseLimit is the longest lease g's replicas allow now (by their
	// reported Raft timing; nil: LeaseDuration).
	LeaseLimit func(g slotstore.GroupID) time.Duration
	// ReadPath counts how linearizable reads were answered (metrics; nil:
	// not counted).
	ReadPath func(propose.ReadPath)
	// Log records what this process saved to or sent from each replica's
	// Raft log (nil: a leader's read under its lease always queries the log)
	// and tells the role a replica restarts in (nil: its role now).
	Log *raftlog.Factory
	// StartMarks is the directory of the replicas' start marks, the
	// crash-loop breaker (startmarks.go; "": none; needs Log); LastCrash
	// the first line of the previous process's crash output, if any.
	StartMarks string
	LastCrash  string
	// FenceMarks is the directory of the fenced replicas' marks
	// (fences.go; "": Fence refuses).
	FenceMarks string
}

// Set is the node's running replicas.
type Set struct {
	cfg     Config
	mu      sync.Mutex // serializes changes; readers use the atomic copy
	groups  atomic.Pointer[map[slotstore.GroupID]*Replica]
	disrupt *disruptions
	// cleared: retired groups this process found without data here (or
	// whose data it removed); Follow does not look again. Only Follow (the
	// reconcile loop) touches it.
	cleared map[slotstore.GroupID]bool
	// stopped: when each group's replica last stopped here (under mu);
	// notBefore: New's time plus StartWait.
	stopped   map[slotstore.GroupID]time.Time
	notBefore time.Time
	// confirmed: a linearizable read of the controller's state succeeded
	// since the process started (only Follow touches it). Until then no
	// replica restarts from its own Raft state: the node's copy of the
	// controller's state may predate a recovery that tombstoned it.
	confirmed bool
	// failed: the replicas this node could not start (failures.go).
	failed failures
	// marks: the replicas replaying their own logs (startmarks.go; nil:
	// none kept).
	marks *startMarks
	// fences are the replicas state checks fenced (fences.go; nil: none
	// kept).
	fences *fences
}

// New returns an empty set.
func New(cfg Config) *Set {
	s := &Set{cfg: cfg, disrupt: newDisruptions(cfg.Settle, cfg.AwayGrace), cleared: map[slotstore.GroupID]bool{},
		stopped: map[slotstore.GroupID]time.Time{}, notBefore: time.Now().Add(cfg.StartWait)}
	empty := map[slotstore.GroupID]*Replica{}
	s.groups.Store(&empty)
	if cfg.StartMarks != "" && cfg.Log != nil {
		m, err := loadMarks(cfg.StartMarks, cfg.LastCrash)
		if err != nil {
			cfg.Logger.Error("no crash-loop breaker: the start marks cannot be kept", "err", err)
		} else {
			s.marks = m
		}
	}
	if cfg.FenceMarks != "" {
		f, err := loadFences(cfg.FenceMarks)
		if err != nil {
			cfg.Logger.Error("no replica can be fenced: the fence marks cannot be kept", "err", err)
		} else {
			s.fences = f
		}
	}
	return s
}

// Failures returns the replicas this node could not start, by group
// (failures.go).
func (s *Set) Failures() []slotstore.ReplicaFailure { return s.failed.list() }

// Get returns the replica of g on this node (nil when none runs).
func (s *Set) Get(g slotstore.GroupID) *Replica { return (*s.groups.Load())[g] }

// All returns the running replicas by group; the map must not be changed.
func (s *Set) All() map[slotstore.GroupID]*Replica { return *s.groups.Load() }

// Want says whether this node should run a replica of group g, with which
// replica id, and whether that replica is (still) a learner: a desired peer
// runs one; so does the target of a replica move once the learner was added
// (and until the task is cancelled).
func (s *Set) Want(st *controller.State, g slotstore.GroupID) (bool, uint64, bool) {
	return st.Wants(s.cfg.NodeID, g)
}

// Follow starts, stops and cleans up replicas so that the node runs what st
// places on it: also a retired group's replica stops and its data goes,
// and what a retired group left while this node was down. Failures are
// logged; the next round tries again, except a replica the engine
// panicked on (failures.go), which is recorded until it is placed
// elsewhere.
func (s *Set) Follow(ctx context.Context, st *controller.State) {
	if !s.confirmed {
		if fresh, err := s.controllerNow(ctx, min(s.cfg.RequestTimeout, time.Second)); err == nil {
			st, s.confirmed = fresh, true
		} else {
			s.cfg.Logger.Debug("controller state not confirmed yet: no replica restarts", "err", err)
		}
	}
	for id := range s.All() {
		if _, ok := st.Groups[id]; !ok && st.IsRetired(id) {
			if err := s.Stop(ctx, id); err != nil {
				s.cfg.Logger.Error("stop the replica of a retired group", "group", id, "err", err)
			}
		}
	}
	for _, id := range st.Retired {
		if s.cleared[id] || s.Get(id) != nil {
			continue
		}
		if s.hasData(id) {
			if err := s.clearStale(ctx, id, 0); err != nil {
				s.cfg.Logger.Error("remove data a retired group left behind", "group", id, "err", err)
				continue
			}
		}
		s.cleared[id] = true
	}
	// A failure is the node's while the controller places that replica
	// here: not once the group retired, or the replica was moved off (a
	// rebuild), or another replica of the group is placed here.
	s.failed.retain(func(rf slotstore.ReplicaFailure) bool {
		want, replica, _ := s.Want(st, rf.Group)
		return want && replica == rf.ReplicaID
	})
	if s.marks != nil {
		s.marks.settle(func(shard uint64) (uint64, bool) {
			g, _ := controller.GroupOfShard(shard)
			if r := s.Get(g); r != nil {
				if m := r.SM(); m != nil {
					return m.AppliedIndex(), true
				}
			}
			return 0, false
		}, time.Now())
	}
	for _, id := range st.GroupIDs() {
		grp := st.Groups[id]
		want, replica, learner := s.Want(st, id)
		running := s.Get(id) != nil
		switch {
		case want && !running:
			if !s.confirmed && s.cfg.NH.HasNodeInfo(controller.ShardOf(id), replica) {
				continue // see confirmed
			}
			if s.failed.gaveUp(id, replica) {
				continue // the engine panicked on it: not again in this process (failures.go)
			}
			if err := s.Start(st, grp, replica, learner); errors.Is(err, errWaitAlone) {
				s.cfg.Logger.Debug("replica waits to replay alone", "group", id, "replica", replica)
			} else if err != nil {
				rf := s.failed.failed(id, replica, err, time.Now())
				s.cfg.Logger.Error("group replica failed to start; the node goes on without it", "group", id, "replica", replica,
					"attempts", rf.Attempts, "tried_again", !rf.Panicked, "err", err)
			} else {
				s.failed.forget(id)
			}
		case !want && running:
			if err := s.Stop(ctx, id); err != nil {
				s.cfg.Logger.Error("stop group replica", "group", id, "err", err)
			}
		case running && s.Get(id).ReplicaID != replica:
			// Rebuilt in place: the controller places a new replica of the
			// group here (a move from this node to itself); the old one,
			// already removed from the group's Raft, goes with its data and
			// the new one starts next round.
			if err := s.Stop(ctx, id); err != nil {
				s.cfg.Logger.Error("stop a replica rebuilt in place", "group", id, "err", err)
			}
		case !want && !running && s.hasData(id):
			// A replica removed while this node was down, or a Stop cut
			// short by a restart, left its data behind; or a recovery
			// tombstoned it (said, once, as its data goes).
			if r, ok := grp.Peers[s.cfg.NodeID]; ok {
				if t, dead := st.Tombstoned(id, r); dead {
					s.cfg.Logger.Error("replica refused: a lost-quorum recovery tombstoned it; its data is removed",
						"group", id, "replica", r, "tombstoned_at_ms", t.AtMs)
				}
			}
			if err := s.clearStale(ctx, id, 0); err != nil {
				s.cfg.Logger.Error("remove data a removed replica left behind", "group", id, "err", err)
			}
		}
	}
}

// publish replaces the map with a copy changed by edit (under s.mu).
func (s *Set) publish(edit func(map[slotstore.GroupID]*Replica)) {
	next := make(map[slotstore.GroupID]*Replica, len(*s.groups.Load())+1)
	for id, r := range *s.groups.Load() {
		next[id] = r
	}
	edit(next)
	s.groups.Store(&next)
}

// Start starts this node's replica of grp and its proposer. A learner that
// was just added joins the group (join, non-voting); a replica that ran here
// before restarts from its own Raft state.
func (s *Set) Start(st *controller.State, grp *controller.Group, replica uint64, learner bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Get(grp.ID) != nil {
		return nil
	}
	g, shard := grp.ID, controller.ShardOf(grp.ID)
	if err := s.isFenced(shard, replica); err != nil {
		return err
	}
	r := &Replica{Group: g, ReplicaID: replica}
	genesis := st.GenesisSlots(g)
	create := func(uint64, uint64) sm.IOnDiskStateMachine {
		m := fsm.New(fsm.Config{Group: g, DB: s.cfg.DB, Genesis: genesis, OnApplied: s.cfg.Applied,
			Changes: s.cfg.Changes, OnCheck: s.cfg.Check, WatchRecords: s.cfg.WatchRecords, WatchAge: s.cfg.WatchAge})
		r.sm.Store(m)
		return m
	}
	var members map[uint64]dragonboat.Target
	cfg := s.cfg.ShardConfig(shard, replica)
	cfg.IsNonVoting = learner
	join := false
	restarted := s.cfg.NH.HasNodeInfo(shard, replica)
	laidOut, err := s.laidOutFor(g, replica, restarted)
	if err != nil {
		return err
	}
	if laidOut {
		// The rows were laid out for this replica (a recovery): its log
		// begins past them (recovery.go).
		if err := s.startLogPast(st, grp, replica); err != nil {
			return err
		}
		restarted = true
	}
	if restarted && s.cfg.Log != nil {
		// As it was where its replay begins, not as it is now: a learner
		// promoted since restarts non-voting and replays its promotion
		// (raftlog/restart.go; issue 51's crash loop).
		if cfg.IsNonVoting, err = s.cfg.Log.RestartsNonVoting(shard, replica); err != nil {
			return err
		}
	}
	marked := false
	if restarted && s.marks != nil {
		target, err := s.cfg.Log.ReplayTarget(shard, replica)
		if err != nil {
			return err
		}
		if err := s.marks.begin(shard, replica, target, time.Now()); err != nil {
			return err
		}
		marked = true
	}
	if !restarted {
		// A new replica starts from nothing (see the package doc).
		if err := s.clearStale(context.Background(), g, replica); err != nil {
			return fmt.Errorf("clear what an earlier replica of group %d left: %w", g, err)
		}
		if learner {
			join = true // the learner was added to the membership: join it
		} else {
			members = map[uint64]dragonboat.Target{}
			for node, rid := range grp.Peers {
				if info, ok := st.Nodes[node]; ok {
					members[rid] = info.RaftAddr
				}
			}
		}
	}
	notBefore := s.notBefore
	if t := s.stopped[g].Add(s.cfg.StartWait); t.After(notBefore) {
		notBefore = t
	}
	if wait := time.Until(notBefore); wait > 0 {
		time.Sleep(wait) // at most one lease: after the process started, or this group's replica stopped
	}
	var saved *raftlog.Appended
	if s.cfg.Log != nil {
		saved = s.cfg.Log.Appended(shard, replica) // before the start: its first save counts
	}
	s.disrupt.started(shard, replica, restarted)
	if err := startEngine(func() error { return s.cfg.NH.StartOnDiskReplica(members, join, create, cfg) }); err != nil {
		s.disrupt.forget(shard)
		if marked {
			s.marks.drop(shard) // it failed here, in this process, which goes on
		}
		return err
	}
	changed := func() context.Context { return s.cfg.Router.LeaderChange(g) }
	leaderOf := func(rid uint64) slotstore.NodeID {
		node, _ := s.cfg.Controller().NodeOfReplica(g, rid)
		return node
	}
	r.nh, r.shard = s.cfg.NH, shard
	rep := &propose.RaftReplicator{NH: s.cfg.NH, Shard: shard, Group: g, Replica: replica, Session: s.cfg.NH.GetNoOPSession(shard),
		LeaderOf: leaderOf, Changed: changed, Dropped: s.cfg.DroppedProposal}
	r.Proposer = propose.New(s.cfg.Proposer, rep, s.cfg.Batches(g))
	r.Lease = propose.NewLease(s.cfg.LeaseDuration, nil)
	if s.cfg.LeaseLimit != nil {
		r.Lease.LimitBy(func() time.Duration { return s.cfg.LeaseLimit(g) })
	}
	waitApplied := func(ctx context.Context, index uint64) error {
		if m := r.SM(); m != nil {
			return m.WaitApplied(ctx, index)
		}
		return dragonboat.ErrShardNotReady
	}
	applied := func() uint64 {
		if m := r.SM(); m != nil {
			return m.AppliedIndex()
		}
		return 0
	}
	r.Leased = &propose.LeasedReadIndex{NH: s.cfg.NH, Shard: shard, Replica: replica, Lease: r.Lease,
		Round: propose.NodeHostReadIndex{NH: s.cfg.NH, Shard: shard, Changed: changed}, Applied: applied, WaitApplied: waitApplied,
		RemoteBudget: s.cfg.RemoteBudget, Changed: changed, Observe: s.cfg.ReadPath}
	if saved != nil {
		r.Leased.Saved = saved.Load
	}
	if s.cfg.RemoteReadIndex != nil {
		r.Leased.Remote = func(ctx context.Context, leader uint64) (uint64, error) {
			node := leaderOf(leader)
			if node == 0 || node == s.cfg.NodeID {
				return 0, fmt.Errorf("replica %d of group %d is on no other known node", leader, g)
			}
			return s.cfg.RemoteReadIndex(ctx, g, node)
		}
	}
	r.Reads = propose.NewReadBatcher(r.Leased, s.cfg.RequestTimeout)
	s.publish(func(m map[slotstore.GroupID]*Replica) { m[g] = r })
	s.cfg.Logger.Info("group replica started", "group", g, "replica", replica)
	return nil
}

// Stop stops this node's replica of g and removes its data: the Raft log
// (SyncRemoveData) and the group's key span in the store. Only called when
// the controller no longer wants a replica here.
func (s *Set) Stop(ctx context.Context, g slotstore.GroupID) error {
	s.mu.Lock()
	r := s.Get(g)
	if r == nil {
		s.mu.Unlock()
		return nil
	}
	s.publish(func(m map[slotstore.GroupID]*Replica) { delete(m, g) })
	defer func() {
		s.mu.Lock()
		s.stopped[g] = time.Now()
		s.mu.Unlock()
	}()
	s.mu.Unlock()
	// The replica stops before its proposer: the proposals it has in flight
	// are answered at once (ErrShardClosed: timeout, may have been applied)
	// instead of each waiting out its deadline, which held this round of
	// Follow — and everything behind it — for seconds.
	shard := controller.ShardOf(g)
	s.disrupt.forget(shard)
	stopErr := s.cfg.NH.StopReplica(shard, r.ReplicaID)
	r.Proposer.Close()
	r.Reads.Close()
	if stopErr != nil && !errors.Is(stopErr, dragonboat.ErrShardNotFound) {
		return stopErr
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	if err := s.cfg.NH.SyncRemoveData(rctx, shard, r.ReplicaID); err != nil {
		s.cfg.Logger.Warn("remove raft data of a stopped replica", "group", g, "err", err)
	}
	if s.marks != nil {
		s.marks.drop(shard)
	}
	if s.fences != nil {
		s.fences.drop(shard)
	}
	if err := s.cfg.DB.DeleteGroup(g); err != nil {
		return err
	}
	s.cfg.Router.ForgetGroup(g)
	s.cfg.Logger.Info("group replica stopped and its data removed", "group", g, "replica", r.ReplicaID)
	return nil
}

// Close stops every running replica's proposer and read batcher (the
// NodeHost stops the replicas).
func (s *Set) Close() {
	for _, r := range s.All() {
		r.Proposer.Close()
		r.Reads.Close()
	}
	if s.marks != nil {
		s.marks.close() // a clean end: no replay ended it
	}
}

// hasData reports whether the store holds anything of group g.
func (s *Set) hasData(g slotstore.GroupID) bool {
	ok, _ := s.cfg.DB.HasGroup(g)
	return ok
}

// clearStale removes what replicas of group g other than keep (0: any)
// left on this node: their Raft logs and the group's key span in the store,
// only on the controller's current word (see the package doc), within one
// RequestTimeout. None of them may be running.
func (s *Set) clearStale(ctx context.Context, g slotstore.GroupID, keep uint64) error {
	shard := controller.ShardOf(g)
	var others []uint64
	for _, ni := range s.cfg.NH.GetNodeHostInfo(dragonboat.NodeHostInfoOption{}).LogInfo {
		if ni.ShardID == shard && ni.ReplicaID != keep {
			others = append(others, ni.ReplicaID)
		}
	}
	rows := s.hasData(g)
	if len(others) == 0 && !rows {
		return nil
	}
	// Bounded here, whatever the caller passed: the reconcile loop's own
	// context has no deadline, and dragonboat refuses a SyncRead without
	// one (ErrDeadlineNotSet) — the data of a removed replica or a retired
	// group then stayed for good.
	st, err := s.controllerNow(ctx, s.cfg.RequestTimeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	if want, replica, _ := s.Want(st, g); want && replica != keep {
		return fmt.Errorf("the controller places replica %d of group %d here: its data stays", replica, g)
	}
	for _, rid := range others {
		if err := s.cfg.NH.SyncRemoveData(ctx, shard, rid); err != nil {
			return fmt.Errorf("remove the raft data of replica %d: %w", rid, err)
		}
		s.cfg.Logger.Warn("removed the raft data an earlier replica left", "group", g, "replica", rid)
	}
	if s.marks != nil {
		s.marks.drop(shard)
	}
	if s.fences != nil {
		s.fences.drop(shard) // keep is a new replica: never fenced
	}
	if !rows {
		return nil
	}
	if laid, ok, _ := fsm.RestoredFor(s.cfg.DB, g); ok && keep != 0 && laid == keep {
		return nil // laid out for the replica starting: they are its own (recovery.go)
	}
	if err := s.cfg.DB.DeleteGroup(g); err != nil {
		return err
	}
	s.cfg.Logger.Warn("removed the store data an earlier replica left", "group", g)
	return nil
}

// controllerNow reads the controller's state linearizably, within
// timeout (the reconcile loop's own context has no deadline, and
// dragonboat refuses a SyncRead without one: ErrDeadlineNotSet).
func (s *Set) controllerNow(ctx context.Context, timeout time.Duration) (*controller.State, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := s.cfg.NH.SyncRead(ctx, controller.ShardID, controller.StateQuery{})
	if err != nil {
		return nil, fmt.Errorf("read the controller state: %w", propose.RaftError(err, 0, false))
	}
	st, ok := v.(*controller.State)
	if !ok {
		return nil, fmt.Errorf("controller state query answered %T", v)
	}
	return st, nil
}

// RefreshLeaders re-reads the live leader of every replica here, in case a
// leader event was missed or arrived before the replica mapping was known.
// It returns the groups whose replica here knows no leader.
func (s *Set) RefreshLeaders(st *controller.State) []slotstore.GroupID {
	var leaderless []slotstore.GroupID
	for id := range s.All() {
		leader, term, valid, err := s.cfg.NH.GetLeaderID(controller.ShardOf(id))
		if err != nil {
			continue
		}
		if !valid || leader == 0 {
			s.cfg.Router.SetLeader(id, 0, term)
			leaderless = append(leaderless, id)
			continue
		}
		if node, ok := st.NodeOfReplica(id, leader); ok {
			s.cfg.Router.SetLeader(id, node, term)
		}
	}
	return leaderless
}

// LeaderUpdated follows one of dragonboat's leader events of a slot shard
// (for the disruption tracking); it only takes a short mutex.
func (s *Set) LeaderUpdated(shard, leader uint64) { s.disrupt.leaderUpdated(shard, leader) }

// TransferAway notes that this node is about to ask shard's Raft to hand
// its leadership to another replica: losing it is then not a disruption,
// and the replica's lease ends before the request goes out (a transfer's
// candidate is voted for within the followers' election timeout).
func (s *Set) TransferAway(shard uint64) {
	if g, ok := controller.GroupOfShard(shard); ok {
		if r := s.Get(g); r != nil {
			r.Lease.Revoke(s.cfg.LeaseHold)
		}
	}
	s.disrupt.transferAway(shard)
}

// Disruption is the last disruption of the replica of shard on this node
// and how long ago it ended (kind "" when none).
func (s *Set) Disruption(shard uint64) (kind slotstore.Disruption, ago time.Duration) {
	return s.disrupt.last(shard)
}
