package backupjob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Host is what a backup needs of its node.
type Host interface {
	NodeID() slotstore.NodeID
	// ControllerState is the controller's state, read linearizably where
	// the node holds a replica of the controller.
	ControllerState(ctx context.Context) (*controller.State, error)
	// HasReplica reports whether this node runs a replica of g.
	HasReplica(g slotstore.GroupID) bool
	// LocalImage writes the image of this node's replica of g after a
	// linearizable read round (every write acknowledged before the call is
	// in it).
	LocalImage(ctx context.Context, g slotstore.GroupID, w io.Writer) (fsm.ImageInfo, error)
	// Leader is the node leading g as this node knows it (0: none).
	Leader(g slotstore.GroupID) slotstore.NodeID
	// PeerAddr is node id's peer address ("" unknown).
	PeerAddr(id slotstore.NodeID) string
}

// Config is what a Runner needs.
type Config struct {
	Host  Host
	Peers *peer.Client
	// Root is the directory backups are written under, one directory each.
	Root string
	// ChunkBytes is the size of a backup's chunk files (0: the format's
	// default).
	ChunkBytes int64
	// ServeBytesPerSec bounds how fast this node reads images for other
	// nodes' backups (0: 64 MiB/s).
	ServeBytesPerSec int
	// ImageTimeout bounds one group's image (0: 10 minutes; one from
	// another node is also bounded by a peer call's 60 s).
	ImageTimeout time.Duration
	// RetakeRounds bounds the rounds of retaken images after slots moved
	// (0: 5), RetakePause the pause before each (0: 1 s).
	RetakeRounds int
	RetakePause  time.Duration
	Now          func() time.Time
	Logger       *slog.Logger
}

func (c *Config) defaults() {
	if c.ServeBytesPerSec <= 0 {
		c.ServeBytesPerSec = 64 << 20
	}
	if c.ImageTimeout <= 0 {
		c.ImageTimeout = 10 * time.Minute
	}
	if c.RetakeRounds <= 0 {
		c.RetakeRounds = 5
	}
	if c.RetakePause <= 0 {
		c.RetakePause = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Runner runs this node's backups, one at a time.
type Runner struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	serve  *limiter

	mu   sync.Mutex
	jobs map[string]*slotstore.Backup // this process's, by id (the running one included)
	run  string                       // the running job's id ("": none)
}

// maxKept bounds the finished jobs a Runner remembers (the directories
// stay on disk and are listed from there).
const maxKept = 64

// New returns a Runner; Close stops it.
func New(cfg Config) *Runner {
	cfg.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{cfg: cfg, ctx: ctx, cancel: cancel, jobs: map[string]*slotstore.Backup{}, serve: newLimiter(cfg.ServeBytesPerSec)}
}

// Close cancels a running backup and waits for it.
func (r *Runner) Close() {
	r.cancel()
	r.wg.Wait()
}

var _ slotstore.Backups = (*Runner)(nil)

// StartBackup begins a backup and returns it, running; a conflict while
// another runs on this node.
func (r *Runner) StartBackup(context.Context) (slotstore.Backup, error) {
	if r.cfg.Root == "" {
		return slotstore.Backup{}, slotstore.Errorf(slotstore.CodeFailedPrecondition, "this node has no backup directory")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return slotstore.Backup{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "the node is stopping")
	}
	if r.run != "" {
		return slotstore.Backup{}, slotstore.Errorf(slotstore.CodeConflict, "backup %s is running on this node: one at a time", r.run)
	}
	now := r.cfg.Now().UTC()
	id := now.Format("20060102T150405Z") + "-" + randomHex(3)
	b := &slotstore.Backup{ID: id, State: slotstore.BackupRunning, Dir: filepath.Join(r.cfg.Root, id), Node: r.cfg.Host.NodeID(), Started: now}
	r.jobs[id], r.run = b, id
	r.wg.Go(func() { r.runJob(b) })
	return *b, nil
}

// Backup returns one backup of this node (not_found for an unknown id).
func (r *Runner) Backup(_ context.Context, id string) (slotstore.Backup, error) {
	r.mu.Lock()
	b, ok := r.jobs[id]
	var out slotstore.Backup
	if ok {
		out = *b
	}
	r.mu.Unlock()
	if ok {
		return out, nil
	}
	if r.cfg.Root != "" && filepath.Base(id) == id && !strings.HasPrefix(id, ".") {
		dir := filepath.Join(r.cfg.Root, id)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return onDisk(dir, id, r.cfg.Host.NodeID()), nil
		}
	}
	return slotstore.Backup{}, slotstore.Errorf(slotstore.CodeNotFound, "no backup %q on node %d", id, r.cfg.Host.NodeID())
}

// Backups returns this node's backups, newest first: the ones this
// process ran and every directory under Root (a backup with a manifest is
// done, one without partial, unless it is the one running).
func (r *Runner) Backups(context.Context) ([]slotstore.Backup, error) { return r.list(), nil }

func (r *Runner) list() []slotstore.Backup {
	r.mu.Lock()
	out := make([]slotstore.Backup, 0, len(r.jobs))
	known := map[string]bool{}
	for id, b := range r.jobs {
		out, known[id] = append(out, *b), true
	}
	r.mu.Unlock()
	if r.cfg.Root != "" {
		ents, _ := os.ReadDir(r.cfg.Root) // sorted by name: the ids sort by time
		slices.Reverse(ents)
		read := 0
		for _, e := range ents {
			if !e.IsDir() || known[e.Name()] || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if read++; read > maxListed {
				break
			}
			out = append(out, onDisk(filepath.Join(r.cfg.Root, e.Name()), e.Name(), r.cfg.Host.NodeID()))
		}
	}
	slices.SortFunc(out, func(a, b slotstore.Backup) int { return strings.Compare(b.ID, a.ID) })
	return out[:min(len(out), maxListed)]
}

// maxListed bounds the backups a listing shows (and the manifests it reads):
// the newest ones.
const maxListed = 100

// onDisk describes a backup directory this process did not run, from its
// manifest (not verified: Verify reads every chunk).
func onDisk(dir, id string, node slotstore.NodeID) slotstore.Backup {
	b := slotstore.Backup{ID: id, Dir: dir, Node: node, State: slotstore.BackupPartial}
	m, err := backup.ReadManifest(dir)
	if err != nil {
		b.Error = err.Error()
		return b
	}
	b.State, b.Started, b.Finished = slotstore.BackupDone, m.Created, m.Created
	b.Groups, b.GroupsDone, b.Percent = len(m.Groups), len(m.Groups), 100
	b.ClusterID, b.RouteRevision = m.ClusterID, m.RouteRevision
	for _, s := range m.Streams {
		b.Bytes += s.Bytes
	}
	return b
}

// update edits the job's record under the lock.
func (r *Runner) update(b *slotstore.Backup, edit func(*slotstore.Backup)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	edit(b)
}

// finish records how the job ended and forgets the oldest finished jobs
// past maxKept.
func (r *Runner) finish(b *slotstore.Backup, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b.Finished = r.cfg.Now().UTC()
	if err != nil {
		b.State, b.Error = slotstore.BackupFailed, err.Error()
	} else {
		b.State, b.Percent, b.GroupsDone = slotstore.BackupDone, 100, b.Groups
	}
	r.run = ""
	if len(r.jobs) > maxKept {
		ids := make([]string, 0, len(r.jobs))
		for id := range r.jobs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids[:len(ids)-maxKept] {
			delete(r.jobs, id)
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var errMoved = errors.New("hash slots moved between groups while the backup ran")

// progress returns a writer that counts what passes into the job's bytes.
func (r *Runner) progress(b *slotstore.Backup, w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		n, err := w.Write(p)
		r.update(b, func(b *slotstore.Backup) { b.Bytes += int64(n) })
		return n, err
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// describe is a short account of slots for errors.
func describe(slots []slotstore.HashSlot) string {
	if len(slots) > 8 {
		return fmt.Sprintf("%v and %d more", slots[:8], len(slots)-8)
	}
	return fmt.Sprint(slots)
}
