package fsm

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Restore (issue 29): a group's state recovered from a backup's image
// (RecoverFromSnapshot) becomes the first state of a replica of a restored
// cluster — a Raft group whose log begins just past the restored state, on
// other nodes.

// Rebase says how a restored group's state is rebased.
type Rebase struct {
	// Bump moves the group's revision and every owned slot's change-log
	// position past the old cluster's: a client that cached a revision
	// or holds a watch cursor from after the backup sees time go on, not
	// back — its cursor answers compacted (relist), never someone else's
	// changes under numbers it already saw.
	Bump uint64
	// Replica is the restored cluster's replica the rows are laid out for:
	// recorded, so that the replica, starting new, keeps them
	// (replicas.Set clears what it finds of a group otherwise).
	Replica uint64
	// Index is the applied index the restored state stands at: where the
	// restored replica's Raft log begins (raftlog.Start), at least 1.
	Index uint64
}

// Rebase rewrites the group's system records as the first state of a
// restored cluster's replica: applied index o.Index, revision and
// change-log positions bumped, every
// slot's change log emptied (everything up to the new position counts as
// compacted), no slot fenced or tracked (no migration survives a restore),
// and the replica the rows are for recorded. Rows, idempotency records and
// ownership are kept. It must run before the replica starts.
//
// The applied index is o.Index, the index the replica's log begins past,
// not 0: a group started new at index 0 would send a replica added to it
// later its log from the first entry, to replay over an empty state
// (raftlog.Start says why).
func (s *StateMachine) Rebase(o Rebase) error {
	if o.Replica == 0 || o.Index == 0 {
		return fmt.Errorf("fsm: rebase of group %d: replica %d at index %d", s.cfg.Group, o.Replica, o.Index)
	}
	g := s.cfg.Group
	rev, err := s.getSysU64(meta.SysRevision)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	set := func(k, v []byte) {
		if err == nil {
			err = b.Set(k, v, nil)
		}
	}
	drop := func(from, to []byte) {
		if err == nil {
			err = b.DeleteRange(from, to, nil)
		}
	}
	set(meta.SysKey(g, meta.SysApplied), u64(o.Index))
	set(meta.SysKey(g, meta.SysRevision), u64(rev+o.Bump))
	set(meta.SysKey(g, meta.SysRestored), u64(o.Replica))
	for _, kind := range []meta.SysKind{meta.SysFenced, meta.SysTracked} {
		if err == nil {
			err = b.Delete(meta.SysKey(g, kind), nil)
		}
	}
	cl := meta.SysKey(g, meta.SysChangeLog)
	drop(cl, meta.PrefixEnd(cl))
	for _, hs := range s.owned.Load().Slots() {
		h, herr := s.readHead(s.db, hs)
		if herr != nil {
			return herr
		}
		last := h.Last + o.Bump
		prefix := meta.WatchPrefix(g, hs)
		drop(prefix, meta.PrefixEnd(prefix))
		set(meta.WatchHeadKey(g, hs), meta.EncodeWatchHead(&meta.WatchHead{Last: last, First: last + 1}))
	}
	if err != nil {
		return fmt.Errorf("fsm: rebase of group %d: %w", g, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("fsm: rebase of group %d: %w", g, err)
	}
	return s.load()
}

// RestoredFor reports the replica a restore laid group g's rows out for
// in db (Rebase), if any.
func RestoredFor(db *store.DB, g slotstore.GroupID) (replica uint64, ok bool, err error) {
	return sysU64(db.Pebble(), g, meta.SysRestored)
}

// MarkRestored records, durably, that group g's rows in db are laid out
// for replica: before a recovery changes them (replicas.PrepareRecovery),
// so that a crash halfway leaves rows no other replica restarts over.
func MarkRestored(db *store.DB, g slotstore.GroupID, replica uint64) error {
	return db.Pebble().Set(meta.SysKey(g, meta.SysRestored), u64(replica), pebble.Sync)
}

// ClearRestored drops the record of the replica group g's rows were laid
// out for: a replica starting on them takes them as its own first, so
// that no later image of the group carries the record to another replica.
func ClearRestored(db *store.DB, g slotstore.GroupID) error {
	return db.Pebble().Delete(meta.SysKey(g, meta.SysRestored), pebble.Sync)
}

// AppliedIn reads the applied index of group g's rows in db.
func AppliedIn(db *store.DB, g slotstore.GroupID) (uint64, error) {
	v, _, err := sysU64(db.Pebble(), g, meta.SysApplied)
	return v, err
}
