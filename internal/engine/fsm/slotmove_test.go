package fsm_test

import (
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// keysOf returns n business keys of hash slot hs.
func keysOf(hs slotstore.HashSlot, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := fmt.Sprintf("live-%d", i); slotstore.HashSlotOfString(k) == hs {
			out = append(out, k)
		}
	}
	return out
}

// TestLiveSlotMove walks a live move on the state machines: the slot is
// copied while it keeps taking writes (a put, an overwrite, a delete), the
// change log brings the target up to date (each row once, with its value
// now), the fence stops the writes and the last catch-up empties the log;
// the target then holds exactly the source's rows, and the release removes
// the slot's rows and its log from the source.
func TestLiveSlotMove(t *testing.T) {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys := keysOf(3, 4)
	hs := slotstore.HashSlot(3)
	h := meta.Header{HashSlot: hs}
	src := openGroup(t, db, 1, []slotstore.HashSlot{hs})
	dst := openGroup(t, db, 2, nil)
	var si, di uint64
	put := func(k, v string) {
		t.Helper()
		if r := apply1(t, src, &si, &meta.PutKV{Header: h, Key: k, Value: []byte(v)}); !r.OK() {
			t.Fatalf("put %s: %+v", k, r)
		}
	}
	put(keys[0], "a0")
	put(keys[1], "b0")
	if _, err := src.Lookup(&meta.ExportChanges{HashSlot: hs}); slotstore.ErrorCode(err) != slotstore.CodeConflict {
		t.Fatalf("changes of an untracked slot: %v", err)
	}
	if r := apply1(t, dst, &di, &meta.TrackSlot{Header: h}); r.OK() {
		t.Fatal("the target tracked a slot it does not own")
	}
	if r := apply1(t, src, &si, &meta.TrackSlot{Header: h}); !r.OK() {
		t.Fatal(r)
	}
	// The copy, while writes go on: keys[1] changes after it was copied,
	// keys[0] is deleted, keys[2] is new.
	v, err := src.Lookup(&meta.ExportSlot{HashSlot: hs, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	chunk := v.(*meta.SlotChunk)
	if r := apply1(t, dst, &di, &meta.ImportRows{Header: h, Rows: chunk.Rows}); !r.OK() {
		t.Fatal(r)
	}
	put(keys[1], "b1")
	put(keys[1], "b2")
	if r := apply1(t, src, &si, &meta.DeleteKV{Header: h, Key: keys[0]}); !r.OK() {
		t.Fatal(r)
	}
	put(keys[2], "c0")
	catchUp := func(idx uint64, seq uint32, maxBytes int) (uint64, uint32, int) {
		t.Helper()
		records := 0
		for {
			v, err := src.Lookup(&meta.ExportChanges{HashSlot: hs, AfterIndex: idx, AfterSeq: seq, MaxBytes: maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			ch := v.(*meta.ChangeChunk)
			records += ch.Records
			if r := apply1(t, dst, &di, &meta.ImportChanges{Header: h, Rows: ch.Rows, Deleted: ch.Deleted}); !r.OK() {
				t.Fatal(r)
			}
			idx, seq = ch.NextIndex, ch.NextSeq
			if ch.Done {
				return idx, seq, records
			}
		}
	}
	idx, seq, n := catchUp(0, 0, 1) // one record a chunk: the cursor must carry on exactly
	if n == 0 || idx == 0 {
		t.Fatalf("catch-up read %d records, cursor %d/%d", n, idx, seq)
	}
	put(keys[3], "d0")
	if r := apply1(t, src, &si, &meta.FenceSlot{Header: h}); !r.OK() {
		t.Fatal(r)
	}
	if _, _, n := catchUp(idx, seq, 1<<20); n == 0 {
		t.Fatal("the last catch-up found nothing: the write after the cursor is lost")
	}
	if _, _, n := catchUp(idx+1<<40, 0, 1<<20); n != 0 {
		t.Fatalf("a cursor past the log still read %d records", n)
	}
	if r := apply1(t, dst, &di, &meta.AcquireSlot{Header: h, MinRevision: chunk.Revision}); !r.OK() {
		t.Fatal(r)
	}
	want := map[string]string{keys[1]: "b2", keys[2]: "c0", keys[3]: "d0"}
	for _, k := range keys {
		v, err := dst.Lookup(&meta.GetKV{HashSlot: hs, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		kv, _ := v.(*meta.KV)
		w, ok := want[k]
		switch {
		case !ok && kv != nil:
			t.Fatalf("%s on the target: %q (deleted at the source)", k, kv.Value)
		case ok && (kv == nil || string(kv.Value) != w):
			t.Fatalf("%s on the target: %+v, want %q", k, kv, w)
		}
	}
	if r := apply1(t, src, &si, &meta.ReleaseSlot{Header: h}); !r.OK() {
		t.Fatal(r)
	}
	for _, p := range [][]byte{meta.SlotPrefix(1, hs), meta.ChangeLogPrefix(1, hs)} {
		if n, err := db.CountKeys(p); err != nil || n != 0 {
			t.Fatalf("the source keeps %d keys under %x after the release (%v)", n, p, err)
		}
	}
}

// TestUntrackDropsTheLog: a cancelled live move stops logging and deletes
// the log; later writes are not logged.
func TestUntrackDropsTheLog(t *testing.T) {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hs := slotstore.HashSlot(3)
	h := meta.Header{HashSlot: hs}
	src := openGroup(t, db, 1, []slotstore.HashSlot{hs})
	var si uint64
	apply1(t, src, &si, &meta.TrackSlot{Header: h})
	k := keysOf(hs, 1)[0]
	apply1(t, src, &si, &meta.PutKV{Header: h, Key: k, Value: []byte("x")})
	if n, _ := db.CountKeys(meta.ChangeLogPrefix(1, hs)); n == 0 {
		t.Fatal("a write to a tracked slot was not logged")
	}
	apply1(t, src, &si, &meta.UntrackSlot{Header: h})
	apply1(t, src, &si, &meta.PutKV{Header: h, Key: k, Value: []byte("y")})
	if n, _ := db.CountKeys(meta.ChangeLogPrefix(1, hs)); n != 0 {
		t.Fatalf("%d log records after untracking", n)
	}
}
