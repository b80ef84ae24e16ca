package store_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/migrations"
)

var versionKey = meta.SysKey(0, meta.SysFormatVersion)

// recorded reads the format-version record straight from Pebble.
func recorded(t *testing.T, db *store.DB) (uint32, bool) {
	t.Helper()
	v, closer, err := db.Pebble().Get(versionKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if len(v) != 4 {
		t.Fatalf("format record of %d bytes", len(v))
	}
	return binary.BigEndian.Uint32(v), true
}

func get(t *testing.T, db *store.DB, key string) (string, bool) {
	t.Helper()
	v, closer, err := db.Pebble().Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return string(v), true
}

func mustOpen(t *testing.T, dir string, o *store.Options) *store.DB {
	t.Helper()
	db, err := store.Open(dir, o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return db
}

func TestOpenMigratesToLatest(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b") // created by Open
	db := mustOpen(t, dir, nil)
	if db.FormatVersion() != migrations.Latest() {
		t.Fatalf("FormatVersion %d, want %d", db.FormatVersion(), migrations.Latest())
	}
	if v, ok := recorded(t, db); !ok || v != migrations.Latest() {
		t.Fatalf("recorded version %d (%v), want %d", v, ok, migrations.Latest())
	}
	if db.Dir() != dir {
		t.Fatalf("Dir %q", db.Dir())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = mustOpen(t, dir, nil)
	defer db.Close()
	if v, ok := recorded(t, db); !ok || v != migrations.Latest() || db.FormatVersion() != v {
		t.Fatalf("after reopen: recorded %d (%v), FormatVersion %d", v, ok, db.FormatVersion())
	}
}

func TestOpenRefusesNewerFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	newer := binary.BigEndian.AppendUint32(nil, migrations.Latest()+1)
	if err := db.Pebble().Set(versionKey, newer, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(dir, nil); !errors.Is(err, migrations.ErrTooNew) {
		t.Fatalf("open of a newer store: %v, want ErrTooNew", err)
	}
	// The refused Open released the DB (its lock) and changed nothing: a
	// binary that knows the newer version opens it.
	list := append(append([]migrations.Migration(nil), migrations.All...),
		migrations.Migration{Version: migrations.Latest() + 1, Name: "future", Up: func(migrations.KV) error {
			t.Error("a migration at the recorded version ran again")
			return nil
		}})
	db = mustOpen(t, dir, &store.Options{Migrations: list})
	defer db.Close()
	if db.FormatVersion() != migrations.Latest()+1 {
		t.Fatalf("FormatVersion %d", db.FormatVersion())
	}
}

func TestOpenRejectsCorruptVersionRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	if err := db.Pebble().Set(versionKey, []byte{1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err := store.Open(dir, nil); err == nil {
		db.Close()
		t.Fatal("a 1-byte format record was accepted")
	}
}

// testMigrations returns n migrations that each record their run in log,
// write "m<v>" = (what m<v-1> wrote) + "<v>", and check that they see every
// earlier migration's writes, both by Get and by Scan.
func testMigrations(t *testing.T, n int, log *[]uint32) []migrations.Migration {
	var list []migrations.Migration
	for v := uint32(1); v <= uint32(n); v++ {
		list = append(list, migrations.Migration{Version: v, Name: fmt.Sprintf("m%d", v), Up: func(kv migrations.KV) error {
			*log = append(*log, v)
			prev := ""
			if v > 1 {
				p, ok, err := kv.Get([]byte(fmt.Sprintf("mig/m%d", v-1)))
				if err != nil || !ok {
					return fmt.Errorf("m%d does not see m%d's write: %v", v, v-1, err)
				}
				prev = string(p)
			}
			if err := kv.Set([]byte(fmt.Sprintf("mig/m%d", v)), []byte(prev+fmt.Sprint(v))); err != nil {
				return err
			}
			// Reads see this migration's own writes, and Scan is in key order.
			var keys []string
			if err := kv.Scan([]byte("mig/"), func(k, _ []byte) error {
				keys = append(keys, string(k))
				return nil
			}); err != nil {
				return err
			}
			if len(keys) != int(v) {
				return fmt.Errorf("m%d scans %v", v, keys)
			}
			for i := 1; i < len(keys); i++ {
				if keys[i-1] >= keys[i] {
					return fmt.Errorf("scan out of order: %v", keys)
				}
			}
			// Delete works within the batch too.
			tmp := []byte(fmt.Sprintf("tmp/m%d", v))
			if err := kv.Set(tmp, []byte("x")); err != nil {
				return err
			}
			if err := kv.Delete(tmp); err != nil {
				return err
			}
			if _, ok, _ := kv.Get(tmp); ok {
				return fmt.Errorf("m%d still sees a deleted key", v)
			}
			return nil
		}})
	}
	return list
}

func TestCustomMigrations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var log []uint32
	all := testMigrations(t, 4, &log)

	db := mustOpen(t, dir, &store.Options{Migrations: all[:2]})
	if fmt.Sprint(log) != "[1 2]" || db.FormatVersion() != 2 {
		t.Fatalf("ran %v, version %d", log, db.FormatVersion())
	}
	if v, _ := recorded(t, db); v != 2 {
		t.Fatalf("recorded %d", v)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopening with more migrations runs only the new ones, in order; each
	// sees the previous one's writes.
	log = nil
	db = mustOpen(t, dir, &store.Options{Migrations: all})
	defer db.Close()
	if fmt.Sprint(log) != "[3 4]" || db.FormatVersion() != 4 {
		t.Fatalf("ran %v, version %d", log, db.FormatVersion())
	}
	if v, _ := get(t, db, "mig/m4"); v != "1234" {
		t.Fatalf("m4 = %q, want 1234", v)
	}
	for v := 1; v <= 4; v++ {
		if _, ok := get(t, db, fmt.Sprintf("tmp/m%d", v)); ok {
			t.Fatalf("tmp/m%d survived its delete", v)
		}
	}
}

func TestFailingMigration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var log []uint32
	list := testMigrations(t, 2, &log)
	boom := errors.New("boom")
	list = append(list, migrations.Migration{Version: 3, Name: "fails halfway", Up: func(kv migrations.KV) error {
		log = append(log, 3)
		if err := kv.Set([]byte("mig/m3"), []byte("partial")); err != nil {
			return err
		}
		if err := kv.Delete([]byte("mig/m1")); err != nil {
			return err
		}
		return boom
	}}, migrations.Migration{Version: 4, Name: "never", Up: func(migrations.KV) error {
		t.Error("a migration after a failed one ran")
		return nil
	}})

	if db, err := store.Open(dir, &store.Options{Migrations: list}); !errors.Is(err, boom) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("open with a failing migration: %v, want it wrapped", err)
	}
	if fmt.Sprint(log) != "[1 2 3]" {
		t.Fatalf("ran %v", log)
	}

	// The store is at the last successful migration, with its writes and
	// none of the failed one's.
	log = nil
	db := mustOpen(t, dir, &store.Options{Migrations: list[:2]})
	defer db.Close()
	if len(log) != 0 {
		t.Fatalf("migrations ran again: %v", log)
	}
	if v, _ := recorded(t, db); v != 2 || db.FormatVersion() != 2 {
		t.Fatalf("recorded %d, FormatVersion %d; want 2", v, db.FormatVersion())
	}
	if v, ok := get(t, db, "mig/m1"); !ok || v != "1" {
		t.Fatalf("m1 = %q, %v: the failed migration's delete leaked", v, ok)
	}
	if v, _ := get(t, db, "mig/m2"); v != "12" {
		t.Fatalf("m2 = %q", v)
	}
	if _, ok := get(t, db, "mig/m3"); ok {
		t.Fatal("the failed migration's write leaked")
	}
}

func TestOpenRejectsBadMigrationList(t *testing.T) {
	t.Parallel()
	gap := []migrations.Migration{{Version: 1, Up: func(migrations.KV) error { return nil }}, {Version: 3, Up: func(migrations.KV) error { return nil }}}
	if db, err := store.Open(t.TempDir(), &store.Options{Migrations: gap}); err == nil {
		db.Close()
		t.Fatal("a migration list with a gap was accepted")
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    store.Options
		ok   bool
	}{
		{"defaults", store.Options{}, true},
		{"1 MiB memtable", store.Options{MemTableSize: 1 << 20}, true},
		{"1 GiB memtable", store.Options{MemTableSize: 1 << 30}, true},
		{"tiny memtable", store.Options{MemTableSize: 1000}, false},
		{"huge memtable", store.Options{MemTableSize: 1<<30 + 1}, false},
		{"negative cache", store.Options{CacheSize: -1}, false},
	} {
		o := tc.o
		o.EnsureDefaults()
		if err := o.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
		if tc.ok {
			continue
		}
		// Open refuses it before touching the directory.
		dir := filepath.Join(t.TempDir(), "store")
		if db, err := store.Open(dir, &tc.o); err == nil {
			db.Close()
			t.Errorf("%s: Open accepted it", tc.name)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: Open created the directory", tc.name)
		}
	}
	// The zero value is only valid once defaulted.
	var zero store.Options
	if zero.Validate() == nil {
		t.Error("a zero memtable size validated")
	}
	zero.EnsureDefaults()
	if zero.MemTableSize != 16<<20 || zero.CacheSize != 32<<20 || zero.Logger == nil || len(zero.Migrations) != len(migrations.All) {
		t.Errorf("defaults %+v", zero)
	}
}

// TestPebbleOptionsWriteIngestibleTables: the options the store hands out
// must be complete enough to write an sstable the DB can ingest (snapshot
// recovery does exactly this). Before a fix they were the un-defaulted
// options, and MakeWriterOptions panicked.
func TestPebbleOptionsWriteIngestibleTables(t *testing.T) {
	t.Parallel()
	db := mustOpen(t, t.TempDir(), nil)
	defer db.Close()
	tmp, err := db.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(tmp) != db.Dir() {
		t.Fatalf("TempDir %q is not inside %q", tmp, db.Dir())
	}
	path := filepath.Join(tmp, "t.sst")
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), db.PebbleOptions().MakeWriterOptions(0, db.Pebble().TableFormat()))
	for i := 0; i < 100; i++ {
		if err := w.Set([]byte(fmt.Sprintf("k%03d", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Pebble().Ingest(t.Context(), []string{path}); err != nil {
		t.Fatal(err)
	}
	if v, _ := get(t, db, "k042"); v != "v" {
		t.Fatalf("ingested k042 = %q", v)
	}
}

func TestSync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := mustOpen(t, dir, nil)
	if err := db.Pebble().Set([]byte("k"), []byte("v"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpen(t, dir, nil)
	defer db.Close()
	if v, _ := get(t, db, "k"); v != "v" {
		t.Fatalf("k = %q", v)
	}
	if !bytes.Equal(versionKey[:4], []byte{0, 0, 0, 0}) {
		t.Fatal("the format record is not under group 0")
	}
}

func TestOpenClearsStagedIngestFiles(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := db.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "g1-123.sst"), []byte("half-written"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(filepath.Join(tmp, "g1-123.sst")); !os.IsNotExist(err) {
		t.Fatalf("a staged file from a crashed recovery survived reopening: %v", err)
	}
}

// TestPointLookupsUseBloomFilters: a lookup of an absent key is answered by
// the sstables' bloom filters without reading their data blocks.
func TestPointLookupsUseBloomFilters(t *testing.T) {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := db.Pebble()
	for i := 0; i < 1000; i++ {
		if err := p.Set([]byte(fmt.Sprintf("present-%04d", i)), []byte("v"), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, _, err := p.Get([]byte(fmt.Sprintf("absent-%04d", i))); !errors.Is(err, pebble.ErrNotFound) {
			t.Fatalf("absent key: %v", err)
		}
	}
	if m := p.Metrics(); m.Filter.Hits == 0 {
		t.Fatalf("no bloom filter hits (misses %d): the tables have no filters", m.Filter.Misses)
	}
}

// TestBlockCacheHoldsBlocks: with both memtables full (Pebble charges them
// to the block cache), reads of flushed keys still find their blocks in the
// cache the second time. Before Open sized the cache for the memtables too,
// two 16 MiB memtables reserved all of a 32 MiB cache and it held nothing.
func TestBlockCacheHoldsBlocks(t *testing.T) {
	db, err := store.Open(t.TempDir(), &store.Options{CacheSize: 4 << 20, MemTableSize: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := db.Pebble()
	key := func(i int) []byte { return fmt.Appendf(nil, "k%08d", i) }
	val := bytes.Repeat([]byte("v"), 200)
	const n = 20000 // ≈ 4.4 MiB: two memtables' worth, flushed below
	for i := range n {
		if err := p.Set(key(i), val, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	// Fill the memtables again so that they reserve their share of the cache.
	for i := range n {
		if err := p.Set(fmt.Appendf(nil, "m%08d", i), val, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	get := func(i int) {
		v, closer, err := p.Get(key(i))
		if err != nil || !bytes.Equal(v, val) {
			t.Fatalf("get %s: %v", key(i), err)
		}
		closer.Close()
	}
	for i := 0; i < n; i += 50 {
		get(i)
	}
	before := p.Metrics().BlockCache
	for i := 0; i < n; i += 50 {
		get(i)
	}
	after := p.Metrics().BlockCache
	if after.Size == 0 || after.Hits-before.Hits < int64(n/50) {
		t.Fatalf("block cache: %+v before the second pass, %+v after it: the blocks read once were not kept", before, after)
	}
}
