package raftlog

import (
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// The Raft log: dragonboat's own sharded-Pebble LogDB, without an fsync for
// a save that only moves the commit index (ADR 0006).
//
// dragonboat writes every save of Raft state with Sync, so a replica pays a
// second fdatasync per write round just to record that its commit index
// advanced: on 3 nodes at one write at a time, 2.0 syncs per write on the
// leader and up to 1.8 on a follower, each holding its step worker. The
// commit index is volatile state in Raft (the thesis, §3.8): a replica that
// restarts with an older one re-learns it from the leader, and entries it
// had applied past it are skipped by dragonboat on replay (an on-disk state
// machine reports its own applied index). etcd makes the same cut
// (raft.MustSync: sync only for new entries, a new term or a new vote).
//
// commitLogDB therefore keeps a save whose only change is the commit index
// in memory and writes it with the same replica's next save that must be
// synced anyway (entries, a snapshot, a new term or vote), on the same
// worker's goroutine as dragonboat requires. Two reads see the deferred
// commit: ReadRaftState while the process runs (a replica restarted in
// place), and, after a crash lost it, a commit below the latest snapshot is
// raised to the snapshot's index — a snapshot covers only applied, hence
// committed, entries, and dragonboat refuses to start a replica whose
// commit is below its snapshot.
//
// Concurrency: dragonboat calls SaveRaftState from several step workers at
// once (never two calls with the same worker id); mu guards the maps.

// newDefaultLogDB is dragonboat's default LogDB constructor (the one a
// NodeHost uses without a LogDBFactory). Its package is internal; the
// dragonboat version is pinned (go.mod), and the build fails if the symbol
// goes away.
//
//go:linkname newDefaultLogDB github.com/lni/dragonboat/v4/internal/logdb.NewDefaultLogDB
func newDefaultLogDB(cfg config.NodeHostConfig, cb config.LogDBCallback, dirs []string, lldirs []string) (raftio.ILogDB, error)

// defaultLogDBName is the name dragonboat records for its default LogDB in
// the NodeHost directory; keeping it lets existing data directories open.
const defaultLogDBName = "sharded-pebble"

// Factory is the NodeHost's LogDB factory (Expert.LogDBFactory): it
// creates the commit-deferring log over dragonboat's default LogDB and keeps
// it, so that its counters can be read (Stats).
type Factory struct {
	db atomic.Pointer[commitLogDB]
	// Saved, when set (before Create), is told how long each save that
	// reached the disk took: the write and its fsync.
	Saved func(took time.Duration)
}

// Name implements config.LogDBFactory: dragonboat's own name for its
// default LogDB, so that existing data directories open.
func (*Factory) Name() string { return defaultLogDBName }

// Create implements config.LogDBFactory.
func (f *Factory) Create(cfg config.NodeHostConfig, cb config.LogDBCallback, dirs []string, lldirs []string) (raftio.ILogDB, error) {
	inner, err := newDefaultLogDB(cfg, cb, dirs, lldirs)
	if err != nil {
		return nil, err
	}
	db := newCommitLogDB(inner)
	db.onSave = f.Saved
	f.db.Store(db)
	return db, nil
}

// Commit is the newest commit index Raft handed the log for a replica,
// written or deferred (false: none yet) — what dragonboat's own log reader
// does not tell after a start.
func (f *Factory) Commit(shard, replica uint64) (uint64, bool) {
	db := f.db.Load()
	if db == nil {
		return 0, false
	}
	k := replicaKey{shard, replica}
	db.mu.Lock()
	defer db.mu.Unlock()
	if d, ok := db.deferred[k]; ok {
		return d.Commit, true
	}
	st, ok := db.saved[k]
	return st.Commit, ok
}

// Stats are the log's counters: saves left out (commit-only), and commits
// raised to the latest snapshot on a read after a crash.
type Stats struct {
	SkippedSaves, CommitsRaised uint64
}

// Stats returns the counters of the log the factory created (zero before).
func (f *Factory) Stats() Stats {
	db := f.db.Load()
	if db == nil {
		return Stats{}
	}
	return Stats{SkippedSaves: db.skippedSaves(), CommitsRaised: db.commitsRaised()}
}

type replicaKey struct{ shard, replica uint64 }

// commitLogDB defers commit-only state saves (see above).
type commitLogDB struct {
	raftio.ILogDB

	mu       sync.Mutex
	saved    map[replicaKey]pb.State // the last state written per replica
	deferred map[replicaKey]pb.State // a newer commit not written yet
	skipped  uint64                  // saves left out entirely (for tests)
	raised   uint64                  // commits ReadRaftState raised to the snapshot (for tests)

	recs sync.Map // replicaKey → *Appended: what this process saved or sent (appended.go)

	onSave func(time.Duration) // Factory.Saved
}

func newCommitLogDB(inner raftio.ILogDB) *commitLogDB {
	return &commitLogDB{ILogDB: inner, saved: map[replicaKey]pb.State{}, deferred: map[replicaKey]pb.State{}}
}

// empty reports whether ud has nothing to write.
func empty(ud *pb.Update) bool {
	return len(ud.EntriesToSave) == 0 && pb.IsEmptySnapshot(ud.Snapshot) && pb.IsEmptyState(ud.State)
}

// commitOnly reports whether ud changes nothing but the commit index of a
// replica whose written state is known.
func (l *commitLogDB) commitOnly(ud *pb.Update) bool {
	if len(ud.EntriesToSave) > 0 || !pb.IsEmptySnapshot(ud.Snapshot) || pb.IsEmptyState(ud.State) {
		return false
	}
	last, ok := l.saved[replicaKey{ud.ShardID, ud.ReplicaID}]
	return ok && last.Term == ud.State.Term && last.Vote == ud.State.Vote
}

// SaveRaftState writes the updates that must be durable now, each carrying
// its replica's deferred commit, and defers the commit-only ones.
func (l *commitLogDB) SaveRaftState(updates []pb.Update, worker uint64) error {
	l.mu.Lock()
	var out []pb.Update
	for i := range updates {
		ud := updates[i] // a copy: dragonboat keeps using its slice
		k := replicaKey{ud.ShardID, ud.ReplicaID}
		if len(ud.EntriesToSave) > 0 {
			l.appended(k).record(ud.EntriesToSave) // before the write: see Appended
		}
		if empty(&ud) {
			continue // nothing to write (an update of messages only)
		}
		if l.commitOnly(&ud) {
			l.deferred[k] = ud.State
			continue
		}
		if d, ok := l.deferred[k]; ok {
			if pb.IsEmptyState(ud.State) {
				ud.State = d
			}
			delete(l.deferred, k)
		}
		if out == nil {
			out = make([]pb.Update, 0, len(updates)-i)
		}
		out = append(out, ud)
	}
	if len(out) == 0 {
		l.skipped++
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	start := time.Now()
	if err := l.ILogDB.SaveRaftState(out, worker); err != nil {
		return err
	}
	if l.onSave != nil {
		l.onSave(time.Since(start))
	}
	l.mu.Lock()
	for i := range out {
		if !pb.IsEmptyState(out[i].State) {
			l.saved[replicaKey{out[i].ShardID, out[i].ReplicaID}] = out[i].State
		}
	}
	l.mu.Unlock()
	return nil
}

// ReadRaftState is the written state with the deferred commit, and a
// commit no lower than the latest snapshot (lastIndex).
func (l *commitLogDB) ReadRaftState(shard, replica, lastIndex uint64) (raftio.RaftState, error) {
	rs, err := l.ILogDB.ReadRaftState(shard, replica, lastIndex)
	if err != nil || pb.IsEmptyState(rs.State) {
		return rs, err
	}
	l.mu.Lock()
	if d, ok := l.deferred[replicaKey{shard, replica}]; ok && d.Term == rs.State.Term && d.Vote == rs.State.Vote {
		rs.State.Commit = max(rs.State.Commit, d.Commit)
	}
	if rs.State.Commit < lastIndex {
		rs.State.Commit = lastIndex
		l.raised++
	}
	l.mu.Unlock()
	return rs, nil
}

// forget drops what is known about a replica whose data is replaced.
func (l *commitLogDB) forget(shard, replica uint64) {
	l.mu.Lock()
	delete(l.saved, replicaKey{shard, replica})
	delete(l.deferred, replicaKey{shard, replica})
	l.mu.Unlock()
}

func (l *commitLogDB) RemoveNodeData(shard, replica uint64) error {
	l.forget(shard, replica)
	return l.ILogDB.RemoveNodeData(shard, replica)
}

func (l *commitLogDB) ImportSnapshot(ss pb.Snapshot, replica uint64) error {
	l.forget(ss.ShardID, replica)
	return l.ILogDB.ImportSnapshot(ss, replica)
}

// commitsRaised is the number of ReadRaftState answers whose commit was
// raised to the latest snapshot's index.
func (l *commitLogDB) commitsRaised() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.raised
}

// skippedSaves is the number of SaveRaftState calls that wrote nothing.
func (l *commitLogDB) skippedSaves() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.skipped
}
