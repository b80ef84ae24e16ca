// Package fsm is the slot group state machine: a dragonboat
// IOnDiskStateMachine over the node's shared Pebble store, one instance per
// local replica of a group, writing only under its group's key prefix.
//
// Apply model. Update receives a contiguous run of committed entries; each
// entry holds many commands (the proposer coalesced them). Every command of
// the run is applied into ONE indexed Pebble batch — later commands see
// earlier ones — together with the group's applied index, revision counter
// and idempotency bookkeeping, and the batch is committed once without
// fsync. That is safe: Open returns the applied index that is durable, and
// dragonboat replays every committed entry after it from its own (fsynced)
// log, so a crash can lose only a suffix of applied state, never a hole.
// The one exception: an entry that asks for a state check (meta.CheckState)
// ends the batch, committed after that entry so every replica hashes its
// state at the same index, and the entries after it start a new batch
// (applyRun).
//
// Every command is checked before it is applied: it must decode, its hash
// slot must be the hash slot of its route key, and the group must own that
// hash slot (the owned set is replicated state, under the group's system
// keys). A command that fails a check gets an error result and writes
// nothing; a malformed command never panics (it is already in every log).
//
// Concurrency (dragonboat's contract): Update, Sync, PrepareSnapshot,
// RecoverFromSnapshot and Close never run concurrently with each other;
// Lookup and SaveSnapshot may run concurrently with Update. Lookup therefore
// reads only Pebble (committed batches) and atomics: it answers through
// reader (lookup.go), the read side, while Update applies through applier
// (apply.go), the write side.
package fsm

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// Config describes one replica's state machine.
type Config struct {
	Group slotstore.GroupID
	DB    *store.DB
	// Genesis is the owned hash-slot set at Raft index 0 (from the initial
	// HashToGroup table). It is written once, when the group's state is empty.
	Genesis []slotstore.HashSlot
	// DedupCapacity bounds the idempotency records kept per group (default
	// 100000). It and DedupTTL decide which records are evicted, which is
	// replicated state: every replica of a group must use the same values
	// (the cluster package always takes the defaults).
	DedupCapacity int
	// DedupTTL is how long an idempotency record is kept (default 24h);
	// older records are evicted as new ones arrive.
	DedupTTL time.Duration
	// EventCapacity is how many message events one channel's projection
	// keeps (default meta.DefaultEventCapacity); an append trims the oldest
	// beyond it. Like DedupCapacity it decides which rows exist: every
	// replica of a group must use the same value (the cluster package
	// always takes the default; tests may set a smaller one).
	EventCapacity int
	// OnApplied, if set, is called after each committed Update with the new
	// applied index and how long the Update took (for metrics). It must not
	// block.
	OnApplied func(g slotstore.GroupID, index uint64, took time.Duration)
	// Changes, if set, is handed the changes each committed Update
	// numbered (watchlog.go), in sequence order per slot.
	Changes watch.Publisher
	// WatchRecords and WatchAge bound the change log each hash slot keeps
	// (defaults DefaultWatchRecords, DefaultWatchAge). Like DedupCapacity
	// they decide which rows exist: every replica of a group must use the
	// same values.
	WatchRecords int
	WatchAge     time.Duration
	// OnCheck, if set, is handed a store snapshot of the state right after
	// the entry at index that carried the state checks ids, proposed at
	// atMs (check.go). It owns the snapshot (closes it) and must not block.
	OnCheck func(g slotstore.GroupID, index uint64, ids []uint64, atMs int64, snap *pebble.Snapshot)
}

// The change log's default retention per hash slot.
const (
	DefaultWatchRecords = 10000
	DefaultWatchAge     = 24 * time.Hour
)

// StateMachine implements sm.IOnDiskStateMachine for one slot group replica.
type StateMachine struct {
	cfg     Config
	db      *pebble.DB
	applied atomic.Uint64
	waiters appliedWaiters // WaitApplied (applied.go)
	owned   atomic.Pointer[meta.SlotSet]
	fenced  atomic.Pointer[meta.SlotSet] // owned slots refusing writes (migrating out)
	tracked atomic.Pointer[meta.SlotSet] // owned slots whose changes are logged (moving out live)
	rev     atomic.Uint64                // revision, for readers (Lookup)

	// Only Update / Open / RecoverFromSnapshot touch these (never concurrently).
	revision             uint64
	dedupHead, dedupTail uint64

	// heads is the change-log head of every slot an Update has written
	// since the state was last loaded (watchlog.go): committed values only.
	heads map[slotstore.HashSlot]meta.WatchHead

	// beforeCommit is a test seam: it sees each Update's batch before commit.
	beforeCommit func(*pebble.Batch)
	// afterCommit is a test seam: it runs after each Update's commit, before
	// what it changed is published.
	afterCommit func()
	// afterIngest is a test seam: it runs when a snapshot's image has
	// replaced the rows, before it is loaded.
	afterIngest func()
	// beforeGet is a test seam: a lookup's point read calls it first.
	beforeGet func()

	closed    chan struct{} // closed by Close
	closeOnce sync.Once
}

var _ sm.IOnDiskStateMachine = (*StateMachine)(nil)

// New returns a state machine for cfg. It touches nothing until Open.
func New(cfg Config) *StateMachine {
	if cfg.DedupCapacity <= 0 {
		cfg.DedupCapacity = 100000
	}
	if cfg.DedupTTL <= 0 {
		cfg.DedupTTL = 24 * time.Hour
	}
	if cfg.EventCapacity <= 0 {
		cfg.EventCapacity = meta.DefaultEventCapacity
	}
	if cfg.WatchRecords <= 0 {
		cfg.WatchRecords = DefaultWatchRecords
	}
	if cfg.WatchAge <= 0 {
		cfg.WatchAge = DefaultWatchAge
	}
	return &StateMachine{cfg: cfg, db: cfg.DB.Pebble(), closed: make(chan struct{})}
}

// Factory adapts a per-group config builder to dragonboat's create function.
func Factory(build func(shardID, replicaID uint64) Config) sm.CreateOnDiskStateMachineFunc {
	return func(shardID, replicaID uint64) sm.IOnDiskStateMachine { return New(build(shardID, replicaID)) }
}

// Group is the group this state machine belongs to.
func (s *StateMachine) Group() slotstore.GroupID { return s.cfg.Group }

// AppliedIndex is the last Raft index applied (and committed to Pebble).
func (s *StateMachine) AppliedIndex() uint64 { return s.applied.Load() }

// Open loads the group's state, writing the genesis state first if the group
// has none, and returns the applied index that is durable.
func (s *StateMachine) Open(stopc <-chan struct{}) (uint64, error) {
	select {
	case <-stopc:
		return 0, sm.ErrOpenStopped
	default:
	}
	g := s.cfg.Group
	_, found, err := s.getSys(meta.SysOwned)
	if err != nil {
		return 0, err
	}
	if !found {
		b := s.db.NewBatch()
		_ = b.Set(meta.SysKey(g, meta.SysOwned), meta.EncodeSlotSet(s.cfg.Genesis), nil)
		_ = b.Set(meta.SysKey(g, meta.SysApplied), u64(0), nil)
		if err := b.Commit(pebble.Sync); err != nil {
			return 0, fmt.Errorf("fsm: write genesis of group %d: %w", g, err)
		}
	}
	if err := s.load(); err != nil {
		return 0, err
	}
	return s.applied.Load(), nil
}

// load reads the in-memory mirror of the group's system records.
func (s *StateMachine) load() error {
	applied, err := s.getSysU64(meta.SysApplied)
	if err != nil {
		return err
	}
	rev, err := s.getSysU64(meta.SysRevision)
	if err != nil {
		return err
	}
	ownedRaw, _, err := s.getSys(meta.SysOwned)
	if err != nil {
		return err
	}
	owned, ok := meta.DecodeSlotSet(ownedRaw)
	if !ok {
		return fmt.Errorf("fsm: group %d: corrupt owned-slot record", s.cfg.Group)
	}
	dm, found, err := s.getSys(meta.SysDedupMeta)
	if err != nil {
		return err
	}
	s.dedupHead, s.dedupTail = 0, 0
	if found {
		if len(dm) != 16 {
			return fmt.Errorf("fsm: group %d: corrupt idempotency record", s.cfg.Group)
		}
		s.dedupHead, s.dedupTail = binary.BigEndian.Uint64(dm), binary.BigEndian.Uint64(dm[8:])
	}
	var fenced, tracked meta.SlotSet
	for _, r := range []struct {
		kind meta.SysKind
		set  *meta.SlotSet
		name string
	}{{meta.SysFenced, &fenced, "fenced"}, {meta.SysTracked, &tracked, "tracked"}} {
		if raw, found, err := s.getSys(r.kind); err != nil {
			return err
		} else if found {
			if *r.set, ok = meta.DecodeSlotSet(raw); !ok {
				return fmt.Errorf("fsm: group %d: corrupt %s-slot record", s.cfg.Group, r.name)
			}
		}
	}
	s.revision = rev
	s.heads = map[slotstore.HashSlot]meta.WatchHead{}
	s.rev.Store(rev)
	s.owned.Store(&owned)
	s.fenced.Store(&fenced)
	s.tracked.Store(&tracked)
	s.applied.Store(applied)
	s.waiters.advanced()
	return nil
}

func (s *StateMachine) getSys(kind meta.SysKind) ([]byte, bool, error) {
	return store.Get(s.db, meta.SysKey(s.cfg.Group, kind))
}

func (s *StateMachine) getSysU64(kind meta.SysKind) (uint64, error) {
	v, _, err := sysU64(s.db, s.cfg.Group, kind)
	return v, err
}

// sysU64 reads group g's u64 system record kind from r (found false, 0:
// none).
func sysU64(r pebble.Reader, g slotstore.GroupID, kind meta.SysKind) (uint64, bool, error) {
	v, found, err := store.Get(r, meta.SysKey(g, kind))
	if err != nil || !found {
		return 0, false, err
	}
	if len(v) != 8 {
		return 0, false, fmt.Errorf("fsm: group %d: system record %d has %d bytes", g, kind, len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// Update applies a run of committed entries in one Pebble batch — or in
// several, when an entry asks for a state check (meta.CheckState): the
// batch is committed after that entry and a store snapshot taken there, so
// every replica hashes its state at the same index (check.go).
func (s *StateMachine) Update(entries []sm.Entry) ([]sm.Entry, error) {
	for done := 0; done < len(entries); {
		n, checks, atMs, err := s.applyRun(entries[done:])
		if err != nil {
			return nil, err
		}
		done += n
		if len(checks) > 0 {
			s.handOverChecks(entries[done-1].Index, checks, atMs)
		}
	}
	return entries, nil
}

// applyRun applies entries into one batch and commits it, stopping after
// the first entry that asks for a check: it returns how many entries it
// applied, that entry's check IDs and when they were proposed.
func (s *StateMachine) applyRun(entries []sm.Entry) (int, []uint64, int64, error) {
	start := time.Now()
	b := s.db.NewIndexedBatch()
	defer b.Close()
	a := applier{sm: s, b: b, revision: s.revision, dedupHead: s.dedupHead, dedupTail: s.dedupTail,
		owned: *s.owned.Load(), fenced: *s.fenced.Load(), tracked: *s.tracked.Load()}
	a.tracking = !a.tracked.Empty()
	n := 0
	for n < len(entries) && len(a.checks) == 0 {
		a.index, a.seq = entries[n].Index, 0
		entries[n].Result = a.applyEntry(entries[n].Cmd)
		n++
	}
	a.flushHeads()
	if a.err != nil {
		// A storage error is not a command's fault: stop rather than diverge.
		return 0, nil, 0, a.err
	}
	last := entries[n-1].Index
	g := s.cfg.Group
	_ = b.Set(meta.SysKey(g, meta.SysApplied), u64(last), nil)
	if a.revision != s.revision {
		_ = b.Set(meta.SysKey(g, meta.SysRevision), u64(a.revision), nil)
	}
	if a.slotsChanged {
		_ = b.Set(meta.SysKey(g, meta.SysOwned), a.owned[:], nil)
		_ = b.Set(meta.SysKey(g, meta.SysFenced), a.fenced[:], nil)
		_ = b.Set(meta.SysKey(g, meta.SysTracked), a.tracked[:], nil)
	}
	if a.dedupHead != s.dedupHead || a.dedupTail != s.dedupTail {
		_ = b.Set(meta.SysKey(g, meta.SysDedupMeta), append(u64(a.dedupHead), u64(a.dedupTail)...), nil)
	}
	if s.beforeCommit != nil {
		s.beforeCommit(b)
	}
	if a.slotsChanged {
		// A slot leaving stops being owned before its rows go, one arriving
		// after they are written: a Lookup between the commit and the
		// publish below then answers wrong_group (asked again where the
		// slot is), never a row missing that exists.
		if old := s.owned.Load(); old != nil {
			staying := old.And(&a.owned)
			s.owned.Store(&staying)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, nil, 0, fmt.Errorf("fsm: commit group %d at %d: %w", g, last, err)
	}
	if s.afterCommit != nil {
		s.afterCommit()
	}
	s.revision, s.dedupHead, s.dedupTail = a.revision, a.dedupHead, a.dedupTail
	a.keepHeads()
	s.rev.Store(a.revision)
	if a.slotsChanged {
		owned, fenced, tracked := a.owned, a.fenced, a.tracked
		s.owned.Store(&owned)
		s.fenced.Store(&fenced)
		s.tracked.Store(&tracked)
	}
	s.applied.Store(last)
	s.waiters.advanced()
	if s.cfg.OnApplied != nil {
		s.cfg.OnApplied(g, last, time.Since(start))
	}
	if len(a.changes) > 0 {
		s.cfg.Changes.Publish(a.changes)
	}
	return n, a.checks, a.checkAtMs, nil
}

// Sync makes everything applied so far durable.
func (s *StateMachine) Sync() error { return s.db.LogData(nil, pebble.Sync) }

// Close releases nothing (the store is shared and closed by its owner after
// the NodeHost); it marks the state machine closed (Closed).
func (s *StateMachine) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// Closed is closed once dragonboat has closed the state machine: its
// replica stopped, nothing of it applies any more (it closes it last,
// when the replica is offloaded from every worker).
func (s *StateMachine) Closed() <-chan struct{} { return s.closed }

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v) }
