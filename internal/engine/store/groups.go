package store

import (
	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Operations on the key span of one group (meta/keys.go: every key of a
// group starts with its id). The slot state machines write inside their
// spans; these are for the node that holds the replicas: whether a group
// left data here, removing what a removed replica left, and counting.

// HasGroup reports whether the store holds anything of group g: its state
// machine writes its system records first, when it opens.
func (d *DB) HasGroup(g slotstore.GroupID) (bool, error) {
	_, found, err := Get(d.db, meta.SysKey(g, meta.SysOwned))
	return found, err
}

// DeleteGroup removes group g's whole key span, durably (one range
// deletion, synced). No replica of g may be running on the node.
func (d *DB) DeleteGroup(g slotstore.GroupID) error {
	prefix := meta.GroupPrefix(g)
	return d.db.DeleteRange(prefix, meta.PrefixEnd(prefix), pebble.Sync)
}

// CountKeys counts the keys under prefix (a group's span, or one hash
// slot's within it): diagnostics of what a node holds.
func (d *DB) CountKeys(prefix []byte) (int, error) {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		return 0, err
	}
	count := 0
	for it.First(); it.Valid(); it.Next() {
		count++
	}
	return count, it.Close()
}

// Stats are the store's memory and disk, for the node's metrics.
type Stats struct {
	BlockCacheBytes, MemTableBytes, FileCacheBytes, DiskBytes uint64
}

// Stats reads the store's counters now.
func (d *DB) Stats() Stats {
	m := d.db.Metrics()
	return Stats{BlockCacheBytes: uint64(m.BlockCache.Size), MemTableBytes: m.MemTable.Size + m.MemTable.ZombieSize,
		FileCacheBytes: uint64(m.FileCache.Size), DiskBytes: m.DiskSpaceUsage()}
}
