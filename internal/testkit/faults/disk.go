package faults

import (
	"sync"
	"sync/atomic"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lni/dragonboat/v4/config"
	lvfs "github.com/lni/vfs"
)

// MaxSyncDelay bounds SetSyncDelay: a slow disk, not a dead one.
const MaxSyncDelay = 10 * time.Second

// Disk slows fsync on one node: every Sync (and SyncData) of a file opened
// through RaftFS (dragonboat's LogDB, snapshots and flag files) or StoreFS
// (the node's Pebble store) first waits out the current delay. Writes and
// reads are untouched. The zero delay costs one atomic load per sync.
//
// A waiting Sync returns as soon as the delay changes or the Disk is closed,
// so a test that lowers the delay or shuts a node down never waits out a
// stale sleep. One Disk per node; keep it across restarts of that node.
type Disk struct {
	delay  atomic.Int64 // nanoseconds
	synced atomic.Uint64

	mu     sync.Mutex
	wake   chan struct{} // closed (and replaced) when the delay changes
	closed bool
}

// NewDisk returns a disk without delay.
func NewDisk() *Disk { return &Disk{wake: make(chan struct{})} }

// SetSyncDelay makes every following Sync wait d (clamped to
// [0, MaxSyncDelay]); Syncs waiting now return at once. A closed Disk stays
// at zero.
func (d *Disk) SetSyncDelay(delay time.Duration) {
	delay = min(max(delay, 0), MaxSyncDelay)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.delay.Store(int64(delay))
	close(d.wake)
	d.wake = make(chan struct{})
}

// SyncDelay is the current delay.
func (d *Disk) SyncDelay() time.Duration { return time.Duration(d.delay.Load()) }

// DelayedSyncs counts the Syncs that waited.
func (d *Disk) DelayedSyncs() uint64 { return d.synced.Load() }

// Close sets the delay to zero for good and wakes every waiting Sync.
func (d *Disk) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	d.delay.Store(0)
	close(d.wake)
}

// wait sleeps the current delay, or until the delay changes or d closes.
func (d *Disk) wait() {
	if d.delay.Load() <= 0 {
		return
	}
	d.mu.Lock()
	delay, wake := time.Duration(d.delay.Load()), d.wake
	d.mu.Unlock()
	if delay <= 0 {
		return
	}
	d.synced.Add(1)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-wake:
	}
}

// RaftFS is the file system for the node's dragonboat NodeHost
// (config.NodeHostConfig.Expert.FS): the OS file system with slow Syncs.
//
// dragonboat's LogDB accepts only its default FS, a memory FS or an
// *ErrorFS (internal/logdb/kv_default.go panics otherwise), so the slow FS
// sits under an ErrorFS that injects nothing. An ErrorFS also puts the
// NodeHost in dragonboat's error-injection mode, whose one effect is that a
// panic in a Raft step worker stops that worker instead of the process: a
// dragonboat bug then shows as a stalled group (a test timeout), not a crash.
func (d *Disk) RaftFS() config.IFS {
	return lvfs.Wrap(&raftFS{FS: lvfs.Default, d: d}, injectNothing{})
}

// injectNothing is an lvfs.Injector that never fails an operation.
type injectNothing struct{}

func (injectNothing) MaybeError(lvfs.Op) error { return nil }

// StoreFS is the file system for the node's Pebble store (store.Options.FS):
// the OS file system with slow Syncs.
func (d *Disk) StoreFS() pvfs.FS { return &storeFS{FS: pvfs.Default, d: d} }

// raftFS wraps every file it opens. The wrapped files deliberately hide the
// OS file's Fd: dragonboat's Pebble would otherwise fdatasync the descriptor
// directly and bypass Sync.
type raftFS struct {
	lvfs.FS
	d *Disk
}

func (fs *raftFS) wrap(f lvfs.File, err error) (lvfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &raftFile{File: f, d: fs.d}, nil
}

func (fs *raftFS) Create(name string) (lvfs.File, error)  { return fs.wrap(fs.FS.Create(name)) }
func (fs *raftFS) OpenDir(name string) (lvfs.File, error) { return fs.wrap(fs.FS.OpenDir(name)) }
func (fs *raftFS) OpenForAppend(name string) (lvfs.File, error) {
	return fs.wrap(fs.FS.OpenForAppend(name))
}
func (fs *raftFS) Open(name string, opts ...lvfs.OpenOption) (lvfs.File, error) {
	return fs.wrap(fs.FS.Open(name, opts...))
}
func (fs *raftFS) ReuseForWrite(oldname, newname string) (lvfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname))
}

type raftFile struct {
	lvfs.File
	d *Disk
}

func (f *raftFile) Sync() error {
	f.d.wait()
	return f.File.Sync()
}

// storeFS wraps every file it opens; Pebble v2 syncs through SyncData and
// Sync (SyncTo is its background write-back hint and is not delayed).
type storeFS struct {
	pvfs.FS
	d *Disk
}

func (fs *storeFS) wrap(f pvfs.File, err error) (pvfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &storeFile{File: f, d: fs.d}, nil
}

func (fs *storeFS) Unwrap() pvfs.FS { return fs.FS }
func (fs *storeFS) Create(name string, c pvfs.DiskWriteCategory) (pvfs.File, error) {
	return fs.wrap(fs.FS.Create(name, c))
}
func (fs *storeFS) Open(name string, opts ...pvfs.OpenOption) (pvfs.File, error) {
	return fs.wrap(fs.FS.Open(name, opts...))
}
func (fs *storeFS) OpenReadWrite(name string, c pvfs.DiskWriteCategory, opts ...pvfs.OpenOption) (pvfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, c, opts...))
}
func (fs *storeFS) OpenDir(name string) (pvfs.File, error) { return fs.wrap(fs.FS.OpenDir(name)) }
func (fs *storeFS) ReuseForWrite(oldname, newname string, c pvfs.DiskWriteCategory) (pvfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, c))
}

type storeFile struct {
	pvfs.File
	d *Disk
}

func (f *storeFile) Sync() error {
	f.d.wait()
	return f.File.Sync()
}

func (f *storeFile) SyncData() error {
	f.d.wait()
	return f.File.SyncData()
}
