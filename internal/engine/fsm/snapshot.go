package fsm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Snapshot image of one group, streamed (never held in memory):
//
//	magic "SMS1" | group u32
//	records: 0x01 | uvarint len | key without the group prefix | uvarint len | value
//	trailer: 0x02 | count u64 | crc32c u32 (over every byte before it)
//
// Recovery writes the records into an sstable as they arrive, checks the
// trailer, and only then swaps the group's whole key span for the sstable in
// one atomic IngestAndExcise. A truncated, corrupt or unordered image, an
// image of another group, or one whose system records could not be loaded is
// rejected with the group's state untouched.
const (
	snapMagic     = "SMS1"
	snapRecord    = 0x01
	snapTrailer   = 0x02
	maxSnapKey    = 64 << 10
	maxSnapValue  = 16 << 20
	snapStopCheck = 1024 // records between checks of the done channel
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptSnapshot is wrapped by every rejection of a snapshot image.
var ErrCorruptSnapshot = errors.New("fsm: corrupt snapshot")

// PrepareSnapshot pins a consistent Pebble snapshot (it runs exclusive of Update).
func (s *StateMachine) PrepareSnapshot() (any, error) { return s.db.NewSnapshot(), nil }

// SaveSnapshot streams the group's key span from the prepared snapshot.
func (s *StateMachine) SaveSnapshot(ctx any, w io.Writer, done <-chan struct{}) error {
	snap, ok := ctx.(*pebble.Snapshot)
	if !ok {
		return fmt.Errorf("fsm: snapshot context is %T", ctx)
	}
	defer snap.Close()
	return s.writeImage(snap, w, done)
}

// writeImage streams the group's key span in snap as an image.
func (s *StateMachine) writeImage(snap *pebble.Snapshot, w io.Writer, done <-chan struct{}) error {
	prefix := meta.GroupPrefix(s.cfg.Group)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 64<<10)
	var hdr [8]byte
	copy(hdr[:], snapMagic)
	binary.BigEndian.PutUint32(hdr[4:], uint32(s.cfg.Group))
	if _, err := bw.Write(hdr[:]); err != nil {
		return err
	}
	var count uint64
	var lenBuf [binary.MaxVarintLen64]byte
	// The mark of the replica a restore or recovery laid the rows out for
	// is that node's own (rebase.go): no image carries it to another.
	laid := meta.SysKey(s.cfg.Group, meta.SysRestored)
	for it.First(); it.Valid(); it.Next() {
		if bytes.Equal(it.Key(), laid) {
			continue
		}
		if count%snapStopCheck == 0 {
			select {
			case <-done:
				return sm.ErrSnapshotStopped
			default:
			}
		}
		k, v := it.Key()[len(prefix):], it.Value()
		_ = bw.WriteByte(snapRecord)
		_, _ = bw.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(k)))])
		_, _ = bw.Write(k)
		_, _ = bw.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(v)))])
		if _, err := bw.Write(v); err != nil {
			return err
		}
		count++
	}
	if err := it.Error(); err != nil {
		return err
	}
	var tr [9]byte
	tr[0] = snapTrailer
	binary.BigEndian.PutUint64(tr[1:], count)
	if _, err := bw.Write(tr[:]); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc.Sum32())
	_, err = w.Write(sum[:])
	return err
}

// RecoverFromSnapshot replaces the group's whole state with the image.
func (s *StateMachine) RecoverFromSnapshot(r io.Reader, done <-chan struct{}) error {
	path, empty, err := s.stageSnapshot(r, done)
	if path != "" {
		defer os.Remove(path)
	}
	if err != nil {
		return err
	}
	if empty {
		// Every group image holds at least its system records.
		return fmt.Errorf("%w: no records", ErrCorruptSnapshot)
	}
	// Lookups run beside a recovery (dragonboat's statemachine/disk.go:
	// RecoverFromSnapshot). While the image replaces the rows the replica
	// owns nothing: a lookup answers wrong_group and is asked again, never
	// the image's rows under the old ownership (a slot the image released
	// read as empty). load publishes the image's sets.
	s.owned.Store(&meta.SlotSet{})
	span := pebble.KeyRange{Start: meta.GroupPrefix(s.cfg.Group), End: meta.PrefixEnd(meta.GroupPrefix(s.cfg.Group))}
	if _, err := s.db.IngestAndExcise(context.Background(), []string{path}, nil, nil, span); err != nil {
		return fmt.Errorf("fsm: ingest snapshot of group %d: %w", s.cfg.Group, err)
	}
	if s.afterIngest != nil {
		s.afterIngest()
	}
	return s.load()
}

// stageSnapshot writes the image's records into an sstable file and verifies
// the trailer. It returns the file (to ingest, then remove) and whether the
// image held no records.
func (s *StateMachine) stageSnapshot(r io.Reader, done <-chan struct{}) (string, bool, error) {
	crc := crc32.New(castagnoli)
	br := bufio.NewReaderSize(r, 64<<10)
	tr := &teeReader{r: br, h: crc}
	var hdr [8]byte
	if _, err := io.ReadFull(tr, hdr[:]); err != nil {
		return "", false, fmt.Errorf("%w: header: %v", ErrCorruptSnapshot, err)
	}
	if string(hdr[:4]) != snapMagic {
		return "", false, fmt.Errorf("%w: bad magic", ErrCorruptSnapshot)
	}
	if g := binary.BigEndian.Uint32(hdr[4:]); g != uint32(s.cfg.Group) {
		return "", false, fmt.Errorf("%w: image of group %d, not %d", ErrCorruptSnapshot, g, s.cfg.Group)
	}
	dir, err := s.cfg.DB.TempDir()
	if err != nil {
		return "", false, err
	}
	f, err := os.CreateTemp(dir, fmt.Sprintf("g%d-*.sst", s.cfg.Group))
	if err != nil {
		return "", false, err
	}
	path := f.Name()
	_ = f.Close()
	vf, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return path, false, err
	}
	opts := s.cfg.DB.PebbleOptions()
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(vf), opts.MakeWriterOptions(0, s.db.TableFormat()))
	closeW := func() {
		if w != nil {
			_ = w.Close()
			w = nil
		}
	}
	defer closeW()
	prefix := meta.GroupPrefix(s.cfg.Group)
	var count uint64
	var prev []byte
	sys := newSysCheck(s.cfg.Group)
	for {
		if count%snapStopCheck == 0 {
			select {
			case <-done:
				return path, false, sm.ErrSnapshotStopped
			default:
			}
		}
		tag, err := tr.ReadByte()
		if err != nil {
			return path, false, fmt.Errorf("%w: truncated after %d records", ErrCorruptSnapshot, count)
		}
		if tag == snapTrailer {
			break
		}
		if tag != snapRecord {
			return path, false, fmt.Errorf("%w: bad record tag %#x", ErrCorruptSnapshot, tag)
		}
		k, err := readChunk(tr, maxSnapKey)
		if err != nil {
			return path, false, err
		}
		v, err := readChunk(tr, maxSnapValue)
		if err != nil {
			return path, false, err
		}
		key := append(append(make([]byte, 0, len(prefix)+len(k)), prefix...), k...)
		if err := sys.check(key, v); err != nil {
			return path, false, err
		}
		// Checked here, not left to the sstable writer: Pebble built with
		// its invariants (race builds) panics on a key out of order.
		if prev != nil && bytes.Compare(key, prev) <= 0 {
			return path, false, fmt.Errorf("%w: record %d out of key order", ErrCorruptSnapshot, count)
		}
		prev = key
		if err := w.Set(key, v); err != nil {
			return path, false, fmt.Errorf("%w: record %d: %v", ErrCorruptSnapshot, count, err)
		}
		count++
	}
	var cnt [8]byte
	if _, err := io.ReadFull(tr, cnt[:]); err != nil {
		return path, false, fmt.Errorf("%w: trailer: %v", ErrCorruptSnapshot, err)
	}
	want := crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(br, sum[:]); err != nil {
		return path, false, fmt.Errorf("%w: checksum: %v", ErrCorruptSnapshot, err)
	}
	if binary.BigEndian.Uint64(cnt[:]) != count {
		return path, false, fmt.Errorf("%w: trailer says %d records, read %d", ErrCorruptSnapshot, binary.BigEndian.Uint64(cnt[:]), count)
	}
	if binary.BigEndian.Uint32(sum[:]) != want {
		return path, false, fmt.Errorf("%w: checksum mismatch", ErrCorruptSnapshot)
	}
	if count > 0 && (!sys.applied || !sys.owned) {
		return path, false, fmt.Errorf("%w: no applied-index or owned-slot record", ErrCorruptSnapshot)
	}
	err = w.Close()
	w = nil
	if err != nil {
		return path, false, err
	}
	return path, count == 0, nil
}

// sysCheck validates the system records of an image before it replaces the
// group's state: load must be able to read them afterwards, or the swap
// would leave a state the replica cannot serve.
type sysCheck struct {
	keys           [5][]byte // applied, owned, revision, dedup meta, fenced
	applied, owned bool
}

func newSysCheck(g slotstore.GroupID) *sysCheck {
	return &sysCheck{keys: [5][]byte{meta.SysKey(g, meta.SysApplied), meta.SysKey(g, meta.SysOwned),
		meta.SysKey(g, meta.SysRevision), meta.SysKey(g, meta.SysDedupMeta), meta.SysKey(g, meta.SysFenced)}}
}

func (c *sysCheck) check(key, v []byte) error {
	want := -1
	switch {
	case bytes.Equal(key, c.keys[0]):
		c.applied, want = true, 8
	case bytes.Equal(key, c.keys[1]):
		c.owned, want = true, len(meta.SlotSet{})
	case bytes.Equal(key, c.keys[2]):
		want = 8
	case bytes.Equal(key, c.keys[3]):
		want = 16
	case bytes.Equal(key, c.keys[4]):
		want = len(meta.SlotSet{})
	}
	if want >= 0 && len(v) != want {
		return fmt.Errorf("%w: system record %x has %d bytes, want %d", ErrCorruptSnapshot, key, len(v), want)
	}
	return nil
}

func readChunk(r *teeReader, max int) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, fmt.Errorf("%w: length: %v", ErrCorruptSnapshot, err)
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: chunk of %d bytes over %d", ErrCorruptSnapshot, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("%w: chunk: %v", ErrCorruptSnapshot, err)
	}
	return b, nil
}

// teeReader hashes everything read through it.
type teeReader struct {
	r *bufio.Reader
	h hash.Hash32
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.h.Write(p[:n])
	return n, err
}

func (t *teeReader) ReadByte() (byte, error) {
	b, err := t.r.ReadByte()
	if err == nil {
		t.h.Write([]byte{b})
	}
	return b, err
}
