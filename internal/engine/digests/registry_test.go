package digests

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore/checks"
)

func TestRegistryHashesTheSnapshotItWasGiven(t *testing.T) {
	db := openMem(t)
	fill(t, db)
	want := digest(t, db)
	r := New(Config{})
	defer r.Close()
	snap := db.NewSnapshot()
	// A write after the snapshot is not in the digest.
	if err := db.Set([]byte{0, 0, 0, 7, 0, 3, 0, 9}, []byte("later"), nil); err != nil {
		t.Fatal(err)
	}
	r.Start(7, 42, []uint64{1, 2}, 0, snap)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range []uint64{1, 2} {
		d, err := r.Wait(ctx, 7, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Index != 42 || d.CheckID != id || checks.Sum(d.Slots) != checks.Sum(want) {
			t.Fatalf("check %d: %+v, want index 42 and the snapshot's digest", id, d)
		}
	}
	// The same check handed over again (a retried proposal applied at a
	// later index) keeps its first result.
	r.Start(7, 50, []uint64{1}, 0, db.NewSnapshot())
	if d, _ := r.Wait(ctx, 7, 1); d.Index != 42 {
		t.Fatalf("a repeated check replaced the first: index %d", d.Index)
	}
}

func TestRegistryWaitsForACheckNotYetApplied(t *testing.T) {
	db := openMem(t)
	fill(t, db)
	r := New(Config{})
	defer r.Close()
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := r.Wait(ctx, 7, 3)
		got <- err
	}()
	r.Start(7, 10, []uint64{3}, 0, db.NewSnapshot())
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// A check this replica never reaches ends with the caller's context,
	// saying so.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.Wait(ctx, 7, 4); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on an unknown check: %v", err)
	}
}

func TestRegistryAnswersBusyWhenItsQueueIsFull(t *testing.T) {
	db := openMem(t)
	fill(t, db)
	// A pace of 1 byte/s holds the worker on its first job (a chunk's
	// burst, then it waits); the queue of one fills with the second.
	r := New(Config{BytesPerSecond: 1, MaxQueued: 1})
	b := db.NewBatch()
	for i := range 3 * paceChunk / 4096 {
		_ = b.Set([]byte{0, 0, 0, 9, 0, 1, 0, 1, byte(i >> 8), byte(i)}, make([]byte, 4096), nil)
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	r.Start(9, 1, []uint64{1}, 0, db.NewSnapshot())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The worker holds at most one job and the queue one more: of checks
	// 2 and 3, the last is refused at once.
	r.Start(9, 2, []uint64{2}, 0, db.NewSnapshot())
	r.Start(9, 3, []uint64{3}, 0, db.NewSnapshot())
	if _, err := r.Wait(ctx, 9, 3); !errors.Is(err, ErrBusy) {
		t.Fatalf("a check past a full queue: %v, want ErrBusy", err)
	}
	// Closing ends the paced hash and every Wait, and closes the queued
	// snapshots (the store then closes without leaked snapshots).
	r.Close()
	if _, err := r.Wait(ctx, 9, 1); err == nil {
		t.Fatal("a check cut short by Close answered no error")
	}
	r.Start(9, 99, []uint64{99}, 0, db.NewSnapshot()) // after Close: closed at once
}

// A check proposed longer ago than MaxAge — a log replayed at a restart —
// is not hashed: its snapshot is closed at once and it answers ErrStale.
func TestRegistryDoesNotHashACheckReplayedLongAfter(t *testing.T) {
	db := openMem(t)
	fill(t, db)
	now := time.UnixMilli(1_800_000_000_000)
	r := New(Config{MaxAge: time.Minute, Now: func() time.Time { return now }})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.Start(7, 5, []uint64{1}, now.Add(-2*time.Minute).UnixMilli(), db.NewSnapshot())
	if _, err := r.Wait(ctx, 7, 1); !errors.Is(err, ErrStale) {
		t.Fatalf("a check replayed two minutes after it was proposed: %v", err)
	}
	r.Start(7, 6, []uint64{2}, now.Add(-30*time.Second).UnixMilli(), db.NewSnapshot())
	if d, err := r.Wait(ctx, 7, 2); err != nil || len(d.Slots) == 0 {
		t.Fatalf("a recent check: %+v %v", d, err)
	}
}
