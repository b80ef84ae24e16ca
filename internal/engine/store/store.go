// Package store opens the node's Pebble database: one DB per node, shared by
// every slot group replica on that node (keys as meta/keys.go lays them out).
//
// Open validates its Options, creates or opens the DB, runs the pending
// format migrations (package slotmeta/migrations) in order — each atomically
// with its version record, synced — and only then returns. Nothing serves
// before the store is at migrations.Latest().
//
// Concurrency: *DB is safe for concurrent use. The slot state machines share
// it; each writes only under its own group prefix.
package store

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/migrations"
)

// Options tune the store. The zero value is valid: EnsureDefaults fills it.
type Options struct {
	// CacheSize is the block cache in bytes (default 32 MiB), for sstable
	// blocks alone: Pebble charges its memtables to the same cache, so Open
	// makes the cache larger by what the memtables may reserve.
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes (default 16 MiB).
	MemTableSize uint64
	// Logger receives Pebble's own log lines at debug level (default: discard).
	Logger *slog.Logger
	// Migrations to run (default migrations.All); tests substitute their own.
	Migrations []migrations.Migration
	// FS is the file system under the DB (default: the OS's); fault tests
	// slow it down (package slotstore/faults).
	FS vfs.FS
}

// EnsureDefaults fills in zero fields.
func (o *Options) EnsureDefaults() {
	o.CacheSize = cmp.Or(o.CacheSize, 32<<20)
	o.MemTableSize = cmp.Or(o.MemTableSize, 16<<20)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Migrations == nil {
		o.Migrations = migrations.All
	}
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	if o.CacheSize < 0 {
		return fmt.Errorf("store: negative cache size")
	}
	if o.MemTableSize < 1<<20 || o.MemTableSize > 1<<30 {
		return fmt.Errorf("store: memtable size %d outside [1 MiB, 1 GiB]", o.MemTableSize)
	}
	return nil
}

// ingestTmp is the directory, inside the store, for files about to be ingested.
const ingestTmp = "ingest-tmp"

// DB is an open store.
type DB struct {
	db      *pebble.DB
	opts    *pebble.Options
	dir     string
	version uint32
}

// Open opens (creating if needed) the store in dir and migrates it.
func Open(dir string, o *Options) (*DB, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// Files staged for ingestion by a process that crashed mid-recovery are
	// garbage: recovery starts over from the snapshot stream.
	if err := os.RemoveAll(filepath.Join(dir, ingestTmp)); err != nil {
		return nil, fmt.Errorf("store: clear staged files: %w", err)
	}
	po := &pebble.Options{
		MemTableSize:       opts.MemTableSize,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{opts.Logger},
		FS:                 opts.FS, // nil: EnsureDefaults takes vfs.Default
	}
	// pebble.Open defaults a clone, not po; PebbleOptions hands po to sstable
	// writers (snapshot recovery), which need the defaults (Levels, Comparer).
	po.EnsureDefaults()
	// Pebble reserves every memtable's size in the block cache (up to
	// MemTableStopWritesThreshold of them before writes stall). A cache of
	// CacheSize alone was all reserved by two 16 MiB memtables and held no
	// block: every index, filter and data block of an sstable was read from
	// the file again (TestBlockCacheHoldsBlocks).
	cache := pebble.NewCache(opts.CacheSize + int64(po.MemTableStopWritesThreshold)*int64(po.MemTableSize))
	defer cache.Unref()
	po.Cache = cache
	// Bloom filters (10 bits per key, ~1% false positives) let the point
	// lookups of the apply path — most of them for keys that do not exist
	// yet (creates, the old value of a put) — skip sstables without reading
	// their index and data blocks.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		po.Levels[i].FilterType = pebble.TableFilter
	}
	pdb, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	d := &DB{db: pdb, opts: po, dir: dir}
	if err := d.migrate(opts.Migrations); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	return d, nil
}

// Pebble returns the underlying DB for the state machines.
func (d *DB) Pebble() *pebble.DB { return d.db }

// PebbleOptions returns the options the DB was opened with (for sstable writers).
func (d *DB) PebbleOptions() *pebble.Options { return d.opts }

// Dir is the store's directory.
func (d *DB) Dir() string { return d.dir }

// TempDir is a directory inside the store for files about to be ingested.
func (d *DB) TempDir() (string, error) {
	p := filepath.Join(d.dir, ingestTmp)
	return p, os.MkdirAll(p, 0o755)
}

// FormatVersion is the store's format version after Open's migrations.
func (d *DB) FormatVersion() uint32 { return d.version }

// Close flushes nothing extra (the WAL is durable up to the last Sync) and closes.
func (d *DB) Close() error { return d.db.Close() }

// Sync makes every write so far durable.
func (d *DB) Sync() error { return d.db.LogData(nil, pebble.Sync) }

func (d *DB) migrate(list []migrations.Migration) error {
	vkey := meta.SysKey(0, meta.SysFormatVersion)
	cur, err := getUint32(d.db, vkey)
	if err != nil {
		return fmt.Errorf("store: read format version: %w", err)
	}
	pending, err := migrations.Pending(list, cur)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, m := range pending {
		b := d.db.NewIndexedBatch()
		if err := m.Up(batchKV{b}); err != nil {
			_ = b.Close()
			return fmt.Errorf("store: migration %d (%s): %w", m.Version, m.Name, err)
		}
		if err := b.Set(vkey, binary.BigEndian.AppendUint32(nil, m.Version), nil); err != nil {
			_ = b.Close()
			return err
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return fmt.Errorf("store: commit migration %d: %w", m.Version, err)
		}
		cur = m.Version
	}
	d.version = cur
	return nil
}

func getUint32(r pebble.Reader, key []byte) (uint32, error) {
	v, found, err := Get(r, key)
	if err != nil || !found {
		return 0, err
	}
	if len(v) != 4 {
		return 0, fmt.Errorf("format version record has %d bytes", len(v))
	}
	return binary.BigEndian.Uint32(v), nil
}

// batchKV adapts an indexed batch to migrations.KV.
type batchKV struct{ b *pebble.Batch }

func (k batchKV) Get(key []byte) ([]byte, bool, error) { return Get(k.b, key) }

func (k batchKV) Set(key, value []byte) error { return k.b.Set(key, value, nil) }
func (k batchKV) Delete(key []byte) error     { return k.b.Delete(key, nil) }

func (k batchKV) Scan(prefix []byte, fn func(key, value []byte) error) error {
	it, err := k.b.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// pebbleLogger sends Pebble's logging to slog at debug level; fatal stays fatal.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	panic(fmt.Sprintf(format, args...))
}

var _ io.Closer = (*DB)(nil)
