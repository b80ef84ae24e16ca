package fsm_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// TestRebaseARestoredGroup: a group recovered from a backup's image and
// rebased stands at the index its log will begin past, with its rows and idempotency records,
// its revision and change-log positions moved past the old ones (a cursor
// of the old cluster answers compacted; new changes follow the new
// position), no slot fenced, and the replica it was laid out for recorded.
func TestRebaseARestoredGroup(t *testing.T) {
	src := openGroup(t, openStore(t, t.TempDir()), 1, []slotstore.HashSlot{1, 2})
	var idx uint64
	key := keysIn("rb", 1, []slotstore.HashSlot{1})[0]
	put := &meta.PutKV{Header: meta.Header{HashSlot: 1, IdempotencyKey: "req-1", TimeMs: 1000}, Key: key, Value: []byte("v")}
	first := apply1(t, src, &idx, put)
	if !first.OK() {
		t.Fatal(first)
	}
	if r := apply1(t, src, &idx, &meta.FenceSlot{Header: meta.Header{HashSlot: 2}}); !r.OK() {
		t.Fatal(r)
	}
	oldHead, err := src.ChangeHead(1)
	if err != nil || oldHead == 0 {
		t.Fatalf("head %d %v", oldHead, err)
	}
	var img bytes.Buffer
	if _, err := src.WriteImage(&img, nil); err != nil {
		t.Fatal(err)
	}
	db := openStore(t, t.TempDir())
	r := openGroup(t, db, 1, nil)
	if err := r.RecoverFromSnapshot(&img, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := fsm.RestoredFor(db, 1); ok {
		t.Fatal("a recovered group is marked restored before its rebase")
	}
	const bump = 1_000_000
	if err := r.Rebase(fsm.Rebase{Bump: bump, Replica: 7, Index: 1}); err != nil {
		t.Fatal(err)
	}
	if r.AppliedIndex() != 1 {
		t.Fatalf("applied index %d after the rebase at 1", r.AppliedIndex())
	}
	if rep, ok, err := fsm.RestoredFor(db, 1); !ok || rep != 7 || err != nil {
		t.Fatalf("restored for %d %v %v", rep, ok, err)
	}
	if h, err := r.ChangeHead(1); err != nil || h != oldHead+bump {
		t.Fatalf("change-log head %d, want %d (%v)", h, oldHead+bump, err)
	}
	if _, err := r.ReadChanges(context.Background(), 1, oldHead-1, 10); !errors.Is(err, watch.ErrCompacted) {
		t.Fatalf("an old cursor: %v, want compacted", err)
	}
	// The new cluster's first entries: the replay of the old request
	// answers from its record; a new write gets a bumped revision and the
	// next change number; the slot that was fenced takes writes.
	ni := uint64(1)
	if again := apply1(t, r, &ni, put); !again.Replayed || again.Revision != first.Revision {
		t.Fatalf("the old request again: %+v, first %+v", again, first)
	}
	next := apply1(t, r, &ni, putKV(key, "w"))
	if !next.OK() || next.Revision <= first.Revision+bump {
		t.Fatalf("a new write: %+v (revision at most %d before)", next, first.Revision)
	}
	recs, err := r.ReadChanges(context.Background(), 1, oldHead+bump, 10)
	if err != nil || len(recs) != 1 || recs[0].Seq != oldHead+bump+1 {
		t.Fatalf("the new change: %+v %v", recs, err)
	}
	k2 := keysIn("rb2", 1, []slotstore.HashSlot{2})[0]
	if w := apply1(t, r, &ni, putKV(k2, "x")); !w.OK() {
		t.Fatalf("a write to the slot that was fenced: %+v", w)
	}
	if r.AppliedIndex() != ni {
		t.Fatalf("applied %d after %d new entries", r.AppliedIndex(), ni)
	}
}
