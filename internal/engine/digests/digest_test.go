package digests

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/checks"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func openMem(t *testing.T) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// fill writes the same rows of group 7 (and a neighbour group) into db.
func fill(t *testing.T, db *pebble.DB) {
	t.Helper()
	b := db.NewBatch()
	for _, s := range []slotstore.HashSlot{3, 5, 200} {
		for _, k := range []string{"a", "b", "c"} {
			_ = b.Set(meta.KVKey(7, s, k), []byte("v-"+k), nil)
			_ = b.Set(meta.KVKey(8, s, k), []byte("other group"), nil)
		}
	}
	_ = b.Set(meta.SysKey(7, meta.SysApplied), []byte{0, 0, 0, 0, 0, 0, 0, 9}, nil)
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

func digest(t *testing.T, db *pebble.DB) []slotstore.SlotDigest {
	t.Helper()
	d, err := Digest(context.Background(), db, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDigestIsPerSlotAndSeesOneChangedByte(t *testing.T) {
	a, b := openMem(t), openMem(t)
	fill(t, a)
	fill(t, b)
	da, db := digest(t, a), digest(t, b)
	if len(da) != 4 || da[3].Slot != slotstore.SystemSlot || da[0].Rows != 3 {
		t.Fatalf("digest = %+v, want slots 3, 5, 200 of 3 rows and the system records", da)
	}
	if checks.Sum(da) != checks.Sum(db) {
		t.Fatalf("same rows, different sums: %+v vs %+v", da, db)
	}
	// A flipped byte in one row of slot 5, and a row of another group:
	// only slot 5 differs.
	if err := b.Set(meta.KVKey(7, 5, "b"), []byte("v-B"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(meta.KVKey(8, 3, "z"), []byte("x"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db = digest(t, b)
	if checks.Sum(da) == checks.Sum(db) {
		t.Fatal("a changed value left the sum unchanged")
	}
	got := differs(da, db)
	if len(got) != 1 || got[0] != 5 {
		t.Fatalf("differing = %v, want [5]", got)
	}
}

func TestDigestLeavesOutTheReplicaLocalRecord(t *testing.T) {
	a, b := openMem(t), openMem(t)
	fill(t, a)
	fill(t, b)
	if err := b.Set(meta.SysKey(7, meta.SysRestored), []byte{1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if checks.Sum(digest(t, a)) != checks.Sum(digest(t, b)) {
		t.Fatal("the restore's replica record (not replicated) changed the digest")
	}
	// A missing row is a difference, and its slot is named.
	if err := b.Delete(meta.KVKey(7, 200, "c"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	got := differs(digest(t, a), digest(t, b))
	if len(got) != 1 || got[0] != 200 {
		t.Fatalf("differing = %v, want [200]", got)
	}
}

func TestDigestStopsWithItsContext(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	big := make([]byte, 4096)
	for i := range 4 * paceChunk / len(big) { // several pace chunks
		_ = b.Set(meta.KVKey(7, 1, fmt.Sprintf("k%06d", i)), big, nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Digest(ctx, db, 7, nil); err == nil {
		t.Fatal("a cancelled digest of several chunks returned no error")
	}
}

// differs is the hash slots a check of two replicas with digests a and b
// finds differing.
func differs(a, b []slotstore.SlotDigest) []slotstore.HashSlot {
	return checks.Compare(1, 1, []checks.Answer{{Node: 1, Digest: slotstore.ReplicaDigest{Slots: a}}, {Node: 2, Digest: slotstore.ReplicaDigest{Slots: b}}}).Differing
}
