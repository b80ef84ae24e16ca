package digests

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// BenchmarkDigest hashes one group of DIGEST_BENCH_MIB MiB (default 64) in
// the node's store on disk (its default options: a 32 MiB block cache, so
// most of a big group is read from files): rows of 200-byte values over 16
// hash slots, compacted. Its MB/s is what one core hashes unpaced; the pace
// (DefaultBytesPerSecond) over it is the share of a core a check costs
// (bench/README.md).
func BenchmarkDigest(b *testing.B) {
	db, total := benchGroup(b)
	b.SetBytes(total)
	b.ResetTimer()
	for b.Loop() {
		snap := db.NewSnapshot()
		slots, err := Digest(context.Background(), snap, 3, nil)
		_ = snap.Close()
		if err != nil || len(slots) != 16 {
			b.Fatalf("digest: %d slots, %v", len(slots), err)
		}
	}
}

// benchGroup writes group 3 of DIGEST_BENCH_MIB MiB (default 64) into a
// store on disk, compacted, and returns it with its bytes.
func benchGroup(b *testing.B) (*pebble.DB, int64) {
	b.Helper()
	mib := 64
	if v, err := strconv.Atoi(os.Getenv("DIGEST_BENCH_MIB")); err == nil && v > 0 {
		mib = v
	}
	sdb, err := store.Open(b.TempDir(), &store.Options{}) // the node's store, its defaults
	if err != nil {
		b.Fatal(err)
	}
	db := sdb.Pebble()
	b.Cleanup(func() { _ = sdb.Close() })
	value := make([]byte, 200)
	var total int64
	batch := db.NewBatch()
	for i := 0; total < int64(mib)<<20; i++ {
		for j := range value {
			value[j] = byte(i + j)
		}
		key := meta.KVKey(3, slotstore.HashSlot(i%16), fmt.Sprintf("user/%012d", i))
		_ = batch.Set(key, value, nil)
		total += int64(len(key) + len(value))
		if batch.Len() > 4<<20 {
			if err := batch.Commit(pebble.NoSync); err != nil {
				b.Fatal(err)
			}
			batch = db.NewBatch()
		}
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		b.Fatal(err)
	}
	if err := db.Compact(context.Background(), meta.GroupPrefix(3), meta.PrefixEnd(meta.GroupPrefix(3)), false); err != nil {
		b.Fatal(err)
	}
	// The load's own compactions done: what a check costs is measured
	// alone.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for m := db.Metrics(); m.Compact.NumInProgress > 0 || m.Compact.EstimatedDebt > 0; m = db.Metrics() {
		<-tick.C
	}
	return db, total
}

// BenchmarkPacedCheckCPU runs checks of the group through a Registry at
// the default pace and reports the process's CPU time over the wall time
// they took (cpu-%: the share of one core a check costs while it runs).
func BenchmarkPacedCheckCPU(b *testing.B) {
	db, total := benchGroup(b)
	r := New(Config{})
	defer r.Close()
	b.SetBytes(total)
	b.ResetTimer()
	var cpu, wall time.Duration
	for i := range b.N {
		before, start := cpuTime(b), time.Now()
		r.Start(3, uint64(i+1), []uint64{uint64(i + 1)}, 0, db.NewSnapshot())
		if _, err := r.Wait(context.Background(), 3, uint64(i+1)); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - before
		wall += time.Since(start)
	}
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
