// Package diskguard keeps a node from filling its data directory's disk.
//
// A Raft log and a Pebble store that hit ENOSPC do not fail gracefully: the
// engine panics on a log write it cannot make, and a store that cannot
// flush stops every group on the node. So, as etcd's NOSPACE alarm and
// CockroachDB's ballast do, the guard acts before the disk is full:
//
//   - It measures the data directory's filesystem (statfs) every Interval.
//     When the space left to the node falls under Reserve the node is
//     *low*: it refuses the writes it would lead (Refusal: no_space, a
//     retryable 503 that names the disk), says so in /readyz, its metrics
//     and its status, and deletes its ballast — a file of BallastBytes kept
//     in the directory while space allows — so that what it must still
//     write (its Raft log's tail, a flush, a compaction that frees space)
//     has room. Reads go on.
//   - It is low until the space left is above Reserve by a margin (a
//     quarter of Reserve), so that it does not flap; then it writes its
//     ballast again and takes writes, without a restart.
//   - Under half the Reserve the node is also *full*: what other nodes
//     send it to store goes unwritten too — the Raft appends and snapshot
//     chunks its follower replicas receive (raftnet.Transport.Hold) — so
//     that a follower does not append until ENOSPC, where the engine
//     panics. Its replicas fall behind, as over a lossy link, and catch up
//     once it is no longer full (a quarter of Reserve above the half).
//
// The guard decides from the filesystem's figures alone; what the node
// does about it (refusing, moving leaderships away) belongs to its
// callers. Concurrency: Check is called by one owner (the node's loop);
// State, Refusal and Reason are safe from any goroutine, and lock-free.
package diskguard

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Defaults.
const (
	DefaultReserve  = 256 << 20
	DefaultInterval = time.Second
)

// BallastFile is the ballast's name in the data directory.
const BallastFile = "DISK_RESERVE"

// Config configures a Guard. Dir is required.
type Config struct {
	Dir string
	// Reserve is the space (bytes) the node keeps free: under it, it is
	// low (default DefaultReserve; negative: no guard).
	Reserve int64
	// BallastBytes is the ballast's size (default Reserve/4, at most
	// 64 MiB; negative: none).
	BallastBytes int64
	// Interval is how often the node's loop calls Check (default
	// DefaultInterval).
	Interval time.Duration
	// Space measures dir's filesystem: the bytes an unprivileged writer
	// may still use, and the total (default: statfs).
	Space func(dir string) (free, total uint64, err error)
	Now   func() time.Time
}

func (c *Config) ensureDefaults() {
	c.Reserve = cmp.Or(c.Reserve, DefaultReserve)
	if c.BallastBytes == 0 {
		c.BallastBytes = min(c.Reserve/4, 64<<20)
	}
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	if c.Space == nil {
		c.Space = Statfs
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// State is what the guard last measured.
type State struct {
	Low     bool      `json:"low"`
	Full    bool      `json:"full"`        // under half the reserve (implies Low)
	Free    uint64    `json:"free_bytes"`  // left to the node, its ballast not counted as used
	Total   uint64    `json:"total_bytes"` // the filesystem's size
	Reserve uint64    `json:"reserve_bytes"`
	Since   time.Time `json:"since"` // when it became low, or ok
	Err     string    `json:"error,omitempty"`
}

// Guard watches one data directory.
type Guard struct {
	cfg Config
	// state is replaced whole by Check (one owner) and read without a lock
	// on every write the node leads (Refusal).
	state atomic.Pointer[State]
}

// New returns a guard of cfg.Dir; it measures nothing until Check.
func New(cfg Config) *Guard {
	cfg.ensureDefaults()
	g := &Guard{cfg: cfg}
	g.state.Store(&State{Reserve: uint64(max(cfg.Reserve, 0)), Since: cfg.Now()})
	return g
}

// Interval is how often the guard wants to be checked.
func (g *Guard) Interval() time.Duration { return g.cfg.Interval }

// Check measures the filesystem, moves the state (low under Reserve, ok
// again above Reserve by a quarter of it), and deletes or writes the
// ballast to match. It returns the new state and whether it changed.
func (g *Guard) Check() (State, bool) {
	if g.cfg.Reserve < 0 {
		return g.State(), false
	}
	free, total, err := g.cfg.Space(g.cfg.Dir)
	ballast := g.ballastSize()
	prev := *g.state.Load()
	s := prev
	s.Err = ""
	if err != nil {
		s.Err = err.Error() // keep the last verdict: a failed measure proves nothing
	} else {
		s.Free, s.Total = free+ballast, total
		reserve := uint64(g.cfg.Reserve)
		switch {
		case !s.Low && s.Free < reserve:
			s.Low, s.Since = true, g.cfg.Now()
		case s.Low && s.Free > reserve+reserve/4:
			s.Low, s.Since = false, g.cfg.Now()
		}
		switch {
		case !s.Full && s.Free < reserve/2:
			s.Full = true
		case s.Full && s.Free > reserve/2+reserve/4:
			s.Full = false
		}
		s.Full = s.Full && s.Low
	}
	g.state.Store(&s)
	if s.Low {
		_ = os.Remove(g.ballastPath()) // room for what must still be written
	} else if err == nil && g.cfg.BallastBytes > 0 && ballast == 0 && free > uint64(g.cfg.Reserve)+uint64(g.cfg.BallastBytes) {
		_ = g.writeBallast()
	}
	return s, s.Low != prev.Low || s.Full != prev.Full
}

// State is the last measure.
func (g *Guard) State() State { return *g.state.Load() }

// Full reports whether the node is full: its follower replicas take
// nothing more to store until it is not (lock-free, for the transport's
// receive path).
func (g *Guard) Full() bool { return g.state.Load().Full }

// Refusal is nil while the disk is not low, else the no_space error a
// write this node would lead is answered with.
func (g *Guard) Refusal(node slotstore.NodeID) error {
	s := g.State()
	if !s.Low {
		return nil
	}
	return &slotstore.Error{Code: slotstore.CodeNoSpace, RetryAfter: 5 * time.Second,
		Message: fmt.Sprintf("node %d's disk is low (%s free of %s, under its %s reserve): it takes no writes until space is freed", node,
			bytes(s.Free), bytes(s.Total), bytes(s.Reserve))}
}

// Reason is why the node is not ready while the disk is low ("" when not).
func (g *Guard) Reason() string {
	s := g.State()
	if !s.Low {
		return ""
	}
	held := ""
	if s.Full {
		held = "; under half of it, its replicas store nothing others send (they fall behind)"
	}
	return fmt.Sprintf("disk low: %s free of %s in %s, under the %s reserve (since %s): writes refused%s", bytes(s.Free), bytes(s.Total),
		g.cfg.Dir, bytes(s.Reserve), s.Since.UTC().Format(time.RFC3339), held)
}

func (g *Guard) ballastPath() string { return filepath.Join(g.cfg.Dir, BallastFile) }

// ballastSize is the ballast's size on disk (0: none).
func (g *Guard) ballastSize() uint64 {
	fi, err := os.Stat(g.ballastPath())
	if err != nil {
		return 0
	}
	return uint64(fi.Size())
}

// writeBallast writes the ballast whole (a temporary file renamed), its
// blocks allocated: by fallocate where the filesystem has it (no data
// written), else by writing zeros.
func (g *Guard) writeBallast() error {
	tmp := g.ballastPath() + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	werr := syscall.Fallocate(int(f.Fd()), 0, 0, g.cfg.BallastBytes)
	if werr != nil {
		chunk := make([]byte, 1<<20)
		werr = nil
		for left := g.cfg.BallastBytes; left > 0 && werr == nil; left -= int64(len(chunk)) {
			_, werr = f.Write(chunk[:min(int64(len(chunk)), left)])
		}
	}
	if werr == nil {
		werr = f.Sync()
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return werr
	}
	return os.Rename(tmp, g.ballastPath())
}

// Statfs is the space an unprivileged writer may still use in dir's
// filesystem, and its size.
func Statfs(dir string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("diskguard: statfs %s: %w", dir, err)
	}
	if st.Bsize <= 0 {
		return 0, 0, errors.New("diskguard: statfs reports no block size")
	}
	bs := uint64(st.Bsize)
	return st.Bavail * bs, st.Blocks * bs, nil
}

// bytes formats n in MiB (KiB under one).
func bytes(n uint64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
