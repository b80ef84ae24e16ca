package faults

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

func TestFaultDiskSlowsRaftSync(t *testing.T) {
	d := NewDisk()
	fs := d.RaftFS()
	f, err := fs.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("entry")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil || d.DelayedSyncs() != 0 {
		t.Fatalf("undelayed sync: %v, %d delayed", err, d.DelayedSyncs())
	}
	const delay = 40 * time.Millisecond
	d.SetSyncDelay(delay)
	start := time.Now()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay || d.DelayedSyncs() != 1 {
		t.Fatalf("sync took %v (want ≥ %v), %d delayed", took, delay, d.DelayedSyncs())
	}
	if _, ok := f.(interface{ Fd() uintptr }); ok {
		t.Fatal("a raft file exposes Fd: Pebble would fdatasync around the delay")
	}
}

// TestFaultDiskWakesSleepers: lowering the delay or closing the disk releases a
// Sync that is waiting, long before its delay is over.
func TestFaultDiskWakesSleepers(t *testing.T) {
	for _, release := range []struct {
		name string
		fn   func(*Disk)
	}{
		{"lower", func(d *Disk) { d.SetSyncDelay(0) }},
		{"close", func(d *Disk) { d.Close() }},
	} {
		t.Run(release.name, func(t *testing.T) {
			d := NewDisk()
			f, err := d.RaftFS().Create(filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d.SetSyncDelay(time.Hour) // clamped to MaxSyncDelay
			if d.SyncDelay() != MaxSyncDelay {
				t.Fatalf("delay %v not clamped", d.SyncDelay())
			}
			done := make(chan error, 1)
			go func() { done <- f.Sync() }()
			testutil.WaitUntil(t, 5*time.Second, time.Millisecond, "the sync waiting", func() bool { return d.DelayedSyncs() != 0 })
			release.fn(d)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(MaxSyncDelay / 2):
				t.Fatal("the waiting sync was not released")
			}
		})
	}
	d := NewDisk()
	d.Close()
	d.SetSyncDelay(time.Second)
	if d.SyncDelay() != 0 {
		t.Fatal("a closed disk took a delay")
	}
}

func TestFaultDiskSlowsPebbleCommit(t *testing.T) {
	d := NewDisk()
	db, err := pebble.Open(t.TempDir(), &pebble.Options{FS: d.StoreFS()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const delay = 40 * time.Millisecond
	d.SetSyncDelay(delay)
	start := time.Now()
	if err := db.Set([]byte("k"), []byte("v"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay || d.DelayedSyncs() == 0 {
		t.Fatalf("synced commit took %v (want ≥ %v), %d delayed", took, delay, d.DelayedSyncs())
	}
	before := d.DelayedSyncs()
	if err := db.Set([]byte("k2"), []byte("v"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if d.DelayedSyncs() != before {
		t.Fatal("an unsynced commit waited")
	}
	d.SetSyncDelay(0)
}
