package fsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// workload is a deterministic mix of every command type over pools of keys,
// with idempotency keys (fresh, replayed and conflicting).
func workload(seed uint64, n int, slots []slotstore.HashSlot) []meta.Command {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pool := n/3 + 1
	users := keysIn(fmt.Sprintf("u%d", seed%3), pool, slots)
	keys := keysIn(fmt.Sprintf("k%d", seed%3), pool, slots)
	now := int64(seed) * 1_000_000
	var out []meta.Command
	for i := 0; i < n; i++ {
		now += 7
		if i > 0 && rng.IntN(20) == 0 {
			// Retry the previous command as is (a replay when it was keyed).
			out = append(out, out[len(out)-1])
			continue
		}
		var c meta.Command
		u, k := users[rng.IntN(len(users))], keys[rng.IntN(len(keys))]
		switch x := rng.IntN(100); {
		case x < 30:
			c = createUser(u, fmt.Sprintf("name-%d", i), now)
		case x < 40:
			c = putUser(u, fmt.Sprintf("renamed-%d", i), now)
		case x < 45:
			c = delUser(u)
		case x < 80:
			v := make([]byte, rng.IntN(200))
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			p := putKV(k, "")
			p.Value = v
			p.Cond = meta.Cond{Kind: meta.CondKind(rng.IntN(4) &^ 1)} // none, if-absent
			if rng.IntN(5) == 0 {
				p.Cond = meta.Cond{Kind: meta.CondIfExists}
			}
			c = p
		case x < 90:
			c = delKV(k, meta.Cond{})
		default:
			c = putKVIf(k, "cas", meta.Cond{Kind: meta.CondIfRevision, Revision: uint64(rng.IntN(2 * n))})
		}
		c.Head().TimeMs = now
		if rng.IntN(5) == 0 {
			c.Head().IdempotencyKey = fmt.Sprintf("w%d-%d", seed, rng.IntN(n))
		}
		out = append(out, c)
	}
	return out
}

// run applies cmds as entries of perEntry commands, several entries per
// Update call, from index after; it returns the last index and every
// entry's encoded results.
func run(tb testing.TB, s *fsm.StateMachine, after uint64, cmds []meta.Command, perEntry int) (uint64, [][]byte) {
	tb.Helper()
	var entries []sm.Entry
	idx := after
	for lo := 0; lo < len(cmds); lo += perEntry {
		idx++
		entries = append(entries, sm.Entry{Index: idx, Cmd: encodeCmds(cmds[lo:min(lo+perEntry, len(cmds))]...)})
	}
	var results [][]byte
	for lo := 0; lo < len(entries); lo += 4 {
		out, err := s.Update(entries[lo:min(lo+4, len(entries))])
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range out {
			results = append(results, e.Result.Data)
		}
	}
	return idx, results
}

// image is a parsed snapshot image (keys without the group prefix).
type image struct {
	group uint32
	recs  []row
	count uint64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func parseImage(tb testing.TB, b []byte) image {
	tb.Helper()
	if string(b[:4]) != "SMS1" {
		tb.Fatalf("magic %q", b[:4])
	}
	im := image{group: binary.BigEndian.Uint32(b[4:8])}
	p := b[8:]
	chunk := func() []byte {
		n, w := binary.Uvarint(p)
		if w <= 0 {
			tb.Fatal("bad length in image")
		}
		c := p[w : w+int(n)]
		p = p[w+int(n):]
		return c
	}
	for p[0] == 0x01 {
		p = p[1:]
		k := chunk()
		im.recs = append(im.recs, row{k, chunk()})
	}
	if p[0] != 0x02 || len(p) != 1+8+4 {
		tb.Fatalf("bad trailer: %x", p)
	}
	im.count = binary.BigEndian.Uint64(p[1:])
	if got, want := binary.BigEndian.Uint32(p[9:]), crc32.Checksum(b[:len(b)-4], castagnoli); got != want {
		tb.Fatalf("image checksum %x, want %x", got, want)
	}
	return im
}

// encode writes im as an image with a valid checksum (count as given).
func (im image) encode() []byte {
	b := []byte("SMS1")
	b = binary.BigEndian.AppendUint32(b, im.group)
	for _, r := range im.recs {
		b = append(b, 0x01)
		b = binary.AppendUvarint(b, uint64(len(r.k)))
		b = append(b, r.k...)
		b = binary.AppendUvarint(b, uint64(len(r.v)))
		b = append(b, r.v...)
	}
	b = append(b, 0x02)
	b = binary.BigEndian.AppendUint64(b, im.count)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func (im image) with(f func(*image)) image {
	c := im
	c.recs = append([]row(nil), im.recs...)
	f(&c)
	return c
}

// sysRec is the key of a system record without the group prefix.
func sysRec(kind meta.SysKind) []byte { return meta.SysKey(0, kind)[4:] }

func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	src := openStore(t, t.TempDir())
	s := newSM(t, src, 1, allSlots())
	noise := newSM(t, src, 2, allSlots())
	run(t, noise, 0, workload(9, 300, allSlots()), 16)
	idx, _ := run(t, s, 0, workload(1, 4500, allSlots()), 32)

	users, kvs, dedup := countTable(t, src, 1, meta.TableUser), countTable(t, src, 1, meta.TableKV), countTable(t, src, 1, meta.TableDedup)
	if users < 500 || kvs < 500 || dedup < 300 {
		t.Fatalf("workload too small: %d users, %d kv, %d idempotency records", users, kvs, dedup)
	}
	want := span(t, src, 1)
	img := snapshot(t, s)
	if im := parseImage(t, img); im.group != 1 || len(im.recs) != len(want) || im.count != uint64(len(want)) {
		t.Fatalf("image: group %d, %d records (count %d), group span %d rows", im.group, len(im.recs), im.count, len(want))
	}

	// Target 1: a fresh store (opened with another genesis, as a new replica is).
	fresh := openStore(t, t.TempDir())
	r1 := newSM(t, fresh, 1, slotRange(0, 3))
	// Target 2: a replica with rows (and idempotency state) the image lacks,
	// beside another group that must not be touched.
	dirty := openStore(t, t.TempDir())
	r2 := newSM(t, dirty, 1, allSlots())
	run(t, r2, 0, workload(2, 900, allSlots()), 8)
	o2 := newSM(t, dirty, 2, allSlots())
	run(t, o2, 0, workload(3, 300, allSlots()), 8)
	g2 := span(t, dirty, 2)
	if len(g2) < 100 {
		t.Fatalf("group 2 has %d rows", len(g2))
	}

	for _, tc := range []struct {
		name string
		db   *store.DB
		r    *fsm.StateMachine
	}{{"fresh", fresh, r1}, {"dirty", dirty, r2}} {
		if err := tc.r.RecoverFromSnapshot(bytes.NewReader(img), nil); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sameSpan(t, tc.name+" recovered", span(t, tc.db, 1), want)
		if tc.r.AppliedIndex() != idx || applied(t, tc.r) != idx {
			t.Fatalf("%s: applied %d, want %d", tc.name, tc.r.AppliedIndex(), idx)
		}
		if owned, _ := tc.r.Lookup(fsm.OwnedQuery{}); !reflect.DeepEqual(owned, allSlots()) {
			t.Fatalf("%s: owned %v", tc.name, owned)
		}
	}
	sameSpan(t, "the other group on the target", span(t, dirty, 2), g2)

	// Replay after recovery: the same further entries give the same results
	// and the same bytes everywhere (revision counter and idempotency FIFO
	// were recovered, not kept from before).
	more := workload(4, 700, allSlots())
	more = append(more, workload(1, 200, allSlots())...) // reuses idempotency keys of the image
	_, want1 := run(t, s, idx, more, 16)
	for _, tc := range []struct {
		name string
		db   *store.DB
		r    *fsm.StateMachine
	}{{"fresh", fresh, r1}, {"dirty", dirty, r2}} {
		_, got := run(t, tc.r, idx, more, 16)
		if !reflect.DeepEqual(got, want1) {
			t.Fatalf("%s: results after recovery differ from the source's", tc.name)
		}
		sameSpan(t, tc.name+" after replay", span(t, tc.db, 1), span(t, src, 1))
	}
	sameSpan(t, "the other group after replay", span(t, dirty, 2), g2)
}

// recordingWriter keeps the image and the size of every Write.
type recordingWriter struct {
	buf      bytes.Buffer
	writes   int
	maxWrite int
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.maxWrite = max(w.maxWrite, len(p))
	return w.buf.Write(p)
}

func TestSnapshotLarge(t *testing.T) {
	t.Parallel()
	src := openStore(t, t.TempDir())
	s := newSM(t, src, 5, allSlots())
	const rows = 20000
	val := bytes.Repeat([]byte("x"), 150)
	var cmds []meta.Command
	for i := 0; i < rows; i++ {
		c := putKV(fmt.Sprintf("key-%06d", i), "")
		c.Value = val
		cmds = append(cmds, c)
	}
	idx, _ := run(t, s, 0, cmds, 256)
	ctx, err := s.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var w recordingWriter
	if err := s.SaveSnapshot(ctx, &w, nil); err != nil {
		t.Fatal(err)
	}
	// Streamed in bounded writes, not as one buffer at the end.
	if w.buf.Len() < rows*150 || w.maxWrite > 128<<10 || w.writes < w.buf.Len()/(128<<10) {
		t.Fatalf("image of %d bytes in %d writes (largest %d)", w.buf.Len(), w.writes, w.maxWrite)
	}
	dst := openStore(t, t.TempDir())
	r := newSM(t, dst, 5, nil)
	if err := r.RecoverFromSnapshot(onlyReader{&w.buf}, nil); err != nil {
		t.Fatal(err)
	}
	got := span(t, dst, 5)
	if len(got) < rows {
		t.Fatalf("%d rows recovered", len(got))
	}
	sameSpan(t, "large image", got, span(t, src, 5))
	if r.AppliedIndex() != idx {
		t.Fatalf("applied %d, want %d", r.AppliedIndex(), idx)
	}
	if kv := getKV(t, r, "key-019999"); kv == nil || !bytes.Equal(kv.Value, val) {
		t.Fatalf("last key: %+v", kv)
	}
}

// onlyReader hides every method but Read (no WriterTo shortcuts).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestSnapshotStopped(t *testing.T) {
	t.Parallel()
	src := openStore(t, t.TempDir())
	s := newSM(t, src, 1, allSlots())
	run(t, s, 0, workload(5, 100, allSlots()), 10)
	stopped := make(chan struct{})
	close(stopped)

	ctx, err := s.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSnapshot(ctx, io.Discard, stopped); !errors.Is(err, sm.ErrSnapshotStopped) {
		t.Fatalf("SaveSnapshot with done closed: %v, want ErrSnapshotStopped", err)
	}

	img := snapshot(t, s)
	dst := openStore(t, t.TempDir())
	r := newSM(t, dst, 1, allSlots())
	run(t, r, 0, workload(6, 50, allSlots()), 10)
	before, idx := span(t, dst, 1), r.AppliedIndex()
	if err := r.RecoverFromSnapshot(bytes.NewReader(img), stopped); !errors.Is(err, sm.ErrSnapshotStopped) {
		t.Fatalf("RecoverFromSnapshot with done closed: %v, want ErrSnapshotStopped", err)
	}
	sameSpan(t, "after a stopped recovery", span(t, dst, 1), before)
	if r.AppliedIndex() != idx {
		t.Fatal("a stopped recovery moved the applied index")
	}
	noStagedFiles(t, dst)
}

func noStagedFiles(t *testing.T, db *store.DB) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(db.Dir(), "ingest-tmp"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("%d staged files left behind (%s…)", len(ents), ents[0].Name())
	}
}

// smallImage builds a group-1 image of a little state.
func smallImage(tb testing.TB) (img []byte, want []row, idx uint64) {
	src := openStore(tb, tb.TempDir())
	s := newSM(tb, src, 1, allSlots())
	idx, _ = run(tb, s, 0, workload(11, 24, allSlots()), 6)
	return snapshot(tb, s), span(tb, src, 1), idx
}

// dirtyTarget is a group-1 replica whose state differs from smallImage's.
func dirtyTarget(tb testing.TB) (*store.DB, *fsm.StateMachine) {
	db := openStore(tb, tb.TempDir())
	r := newSM(tb, db, 1, slotRange(0, 200))
	run(tb, r, 0, workload(12, 40, slotRange(0, 200)), 5)
	o := newSM(tb, db, 2, allSlots())
	run(tb, o, 0, workload(13, 10, allSlots()), 5)
	return db, r
}

func TestSnapshotCorrupt(t *testing.T) {
	t.Parallel()
	img, want, idx := smallImage(t)
	db, r := dirtyTarget(t)
	before, beforeIdx := span(t, db, 1), r.AppliedIndex()
	other := span(t, db, 2)
	im := parseImage(t, img)

	reject := func(name string, bad []byte) {
		t.Helper()
		err := r.RecoverFromSnapshot(bytes.NewReader(bad), nil)
		if !errors.Is(err, fsm.ErrCorruptSnapshot) {
			t.Fatalf("%s: err %v, want ErrCorruptSnapshot", name, err)
		}
		if d := diffSpan(span(t, db, 1), before); d != "" {
			t.Fatalf("%s: a rejected image changed the state: %s", name, d)
		}
		if r.AppliedIndex() != beforeIdx {
			t.Fatalf("%s: applied %d, want %d", name, r.AppliedIndex(), beforeIdx)
		}
	}

	// Every cut point near the ends, every 5th in between.
	for cut := 0; cut < len(img); cut++ {
		if cut < 64 || cut > len(img)-64 || cut%5 == 0 {
			reject(fmt.Sprintf("truncated at %d of %d", cut, len(img)), img[:cut])
		}
	}
	for i := 0; i < len(img); i += 5 {
		for _, x := range []byte{0x01, 0xff} {
			bad := bytes.Clone(img)
			bad[i] ^= x
			reject(fmt.Sprintf("byte %d ^ %#x", i, x), bad)
		}
	}
	reject("wrong magic", append([]byte("SMS2"), img[4:]...))
	// A wrong trailer count, with and without a checksum that matches it.
	reject("count+1, stale checksum", func() []byte {
		b := bytes.Clone(img)
		binary.BigEndian.PutUint64(b[len(b)-12:], im.count+1)
		return b
	}())
	reject("count+1", im.with(func(c *image) { c.count++ }).encode())
	reject("count-1", im.with(func(c *image) { c.count-- }).encode())
	reject("count 0", im.with(func(c *image) { c.count = 0 }).encode())

	// Images that are well formed and correctly checksummed, but wrong.
	n := len(im.recs)
	reject("no records", image{group: 1}.encode())
	reject("unordered", im.with(func(c *image) { c.recs[0], c.recs[1] = c.recs[1], c.recs[0] }).encode())
	reject("duplicate key", im.with(func(c *image) { c.recs = append(c.recs[:3], c.recs[2:]...); c.count++ }).encode())
	reject("oversized key", im.with(func(c *image) {
		c.recs = append(c.recs, row{bytes.Repeat([]byte{0xff}, 65<<10), nil})
		c.count++
	}).encode())
	reject("bad record tag", func() []byte {
		b := im.with(func(c *image) { c.recs = c.recs[:1]; c.count = 1 }).encode()
		b[8] = 0x07
		return b
	}())
	reject("image of another group", im.with(func(c *image) { c.group = 2 }).encode())
	for _, kind := range []meta.SysKind{meta.SysApplied, meta.SysOwned} {
		reject(fmt.Sprintf("without system record %d", kind), im.with(func(c *image) {
			c.recs = c.recs[:0]
			for _, rec := range im.recs {
				if !bytes.Equal(rec.k, sysRec(kind)) {
					c.recs = append(c.recs, rec)
				}
			}
			if len(c.recs) != n-1 {
				t.Fatalf("image has no system record %d", kind)
			}
			c.count = uint64(len(c.recs))
		}).encode())
	}
	for _, kind := range []meta.SysKind{meta.SysApplied, meta.SysOwned, meta.SysRevision, meta.SysDedupMeta} {
		reject(fmt.Sprintf("short system record %d", kind), im.with(func(c *image) {
			found := false
			for i, rec := range c.recs {
				if bytes.Equal(rec.k, sysRec(kind)) {
					c.recs[i] = row{rec.k, rec.v[:len(rec.v)-1]}
					found = true
				}
			}
			if !found {
				t.Fatalf("image has no system record %d", kind)
			}
		}).encode())
	}
	sameSpan(t, "the other group", span(t, db, 2), other)
	noStagedFiles(t, db)

	// After all that, the good image still recovers — and bytes appended
	// after a complete image are ignored.
	if err := r.RecoverFromSnapshot(bytes.NewReader(append(bytes.Clone(img), "junk"...)), nil); err != nil {
		t.Fatal(err)
	}
	sameSpan(t, "good image after rejections", span(t, db, 1), want)
	if r.AppliedIndex() != idx {
		t.Fatalf("applied %d, want %d", r.AppliedIndex(), idx)
	}
	sameSpan(t, "the other group", span(t, db, 2), other)
	noStagedFiles(t, db)
}

// TestSnapshotRecoverThenReopen: recovered state is what Open finds after a
// restart (RecoverFromSnapshot need not fsync, but Sync must cover it).
func TestSnapshotRecoverThenReopen(t *testing.T) {
	t.Parallel()
	img, want, idx := smallImage(t)
	dir := t.TempDir()
	db := rawOpen(t, dir)
	r := newSM(t, db, 1, nil)
	if err := r.RecoverFromSnapshot(bytes.NewReader(img), nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openStore(t, dir)
	got, err := fsm.New(fsm.Config{Group: 1, DB: db}).Open(nil)
	if err != nil || got != idx {
		t.Fatalf("Open after recovery = %d, %v; want %d", got, err, idx)
	}
	sameSpan(t, "reopened", span(t, db, 1), want)
}
