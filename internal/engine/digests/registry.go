package digests

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/time/rate"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Config tunes a Registry; zero fields take the defaults.
type Config struct {
	// BytesPerSecond paces the hashing (default DefaultBytesPerSecond):
	// a 1 GiB group takes about two minutes at the default, at a few
	// percent of a core (bench/README.md).
	BytesPerSecond int
	// MaxQueued bounds the snapshots waiting for the worker (default 8);
	// a check that finds the queue full is answered "busy" on this node.
	MaxQueued int
	// Keep bounds the digests kept for peers to ask (default 512, the
	// oldest dropped first).
	Keep int
	// MaxAge: a check proposed longer ago than this is not hashed
	// (default 10 minutes) — a restart replaying its log applies its old
	// checks again, which nobody waits for.
	MaxAge time.Duration
	Now    func() time.Time
	Logger *slog.Logger
}

// DefaultBytesPerSecond is the default hashing pace.
const DefaultBytesPerSecond = 8 << 20

func (c *Config) defaults() {
	if c.BytesPerSecond <= 0 {
		c.BytesPerSecond = DefaultBytesPerSecond
	}
	if c.MaxQueued <= 0 {
		c.MaxQueued = 8
	}
	if c.Keep <= 0 {
		c.Keep = 512
	}
	if c.MaxAge <= 0 {
		c.MaxAge = 10 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// ErrBusy is the answer for a check this node dropped: its queue was full.
var ErrBusy = errors.New("checks: this node's checker is busy (queue full); check again later")

// key names one check of one group.
type key struct {
	g  slotstore.GroupID
	id uint64
}

// result is one check's digest on this node, or why it has none.
type result struct {
	digest slotstore.ReplicaDigest
	err    error
	done   bool
}

type job struct {
	g     slotstore.GroupID
	ids   []uint64 // the checks one hash answers (those of one entry)
	index uint64
	snap  *pebble.Snapshot
}

// Registry hashes the snapshots the node's state machines hand it and keeps
// the digests for Wait.
type Registry struct {
	cfg    Config
	pace   *rate.Limiter
	jobs   chan job
	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	results map[key]*result
	order   []key         // insertion order, for Keep
	changed chan struct{} // closed and replaced when a result is added or done
	closed  bool
}

// New starts a Registry's worker.
func New(cfg Config) *Registry {
	cfg.defaults()
	life, cancel := context.WithCancel(context.Background())
	r := &Registry{cfg: cfg, pace: rate.NewLimiter(rate.Limit(cfg.BytesPerSecond), max(paceChunk, cfg.BytesPerSecond/4)),
		jobs: make(chan job, cfg.MaxQueued), life: life, cancel: cancel,
		results: map[key]*result{}, changed: make(chan struct{})}
	r.wg.Add(1)
	go r.work()
	return r
}

// ErrStale is the answer for a check proposed longer than MaxAge before
// this node applied it (a log replayed at a restart, a replica far behind).
var ErrStale = errors.New("checks: this replica applied the check too long after it was proposed (a replay); not hashed")

// Start queues the hashing of group g's state in snap, taken at index for
// the checks ids proposed at atMs (0: unknown); the Registry owns snap. It
// never blocks: a full queue answers the checks ErrBusy, one proposed
// more than MaxAge ago ErrStale. An id already known keeps its first result
// (a retried proposal applied twice).
func (r *Registry) Start(g slotstore.GroupID, index uint64, ids []uint64, atMs int64, snap *pebble.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if atMs > 0 && r.cfg.Now().Sub(time.UnixMilli(atMs)) > r.cfg.MaxAge {
		_ = snap.Close()
		for _, id := range ids {
			if r.results[key{g, id}] == nil {
				r.put(key{g, id}, &result{digest: slotstore.ReplicaDigest{Group: g, CheckID: id, Index: index}, err: ErrStale, done: true})
			}
		}
		r.notify()
		return
	}
	var fresh []uint64
	for _, id := range ids {
		if r.results[key{g, id}] == nil {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) == 0 || r.closed {
		_ = snap.Close()
		return
	}
	// One hash serves every check of the entry, each answered under its
	// own id.
	j := job{g: g, ids: fresh, index: index, snap: snap}
	select {
	case r.jobs <- j:
		for _, id := range fresh {
			r.put(key{g, id}, &result{digest: slotstore.ReplicaDigest{Group: g, CheckID: id, Index: index}})
		}
	default:
		_ = snap.Close()
		for _, id := range fresh {
			r.put(key{g, id}, &result{digest: slotstore.ReplicaDigest{Group: g, CheckID: id, Index: index}, err: ErrBusy, done: true})
		}
	}
	r.notify()
}

// put records res under k, dropping the oldest beyond Keep. r.mu is held.
func (r *Registry) put(k key, res *result) {
	if _, ok := r.results[k]; !ok {
		r.order = append(r.order, k)
	}
	r.results[k] = res
	for len(r.order) > r.cfg.Keep {
		delete(r.results, r.order[0])
		r.order = r.order[1:]
	}
}

// notify wakes every Wait. r.mu is held.
func (r *Registry) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Wait returns this node's digest for check id of group g, waiting until
// the replica has applied the check and hashed its state, or ctx ends.
func (r *Registry) Wait(ctx context.Context, g slotstore.GroupID, id uint64) (slotstore.ReplicaDigest, error) {
	for {
		r.mu.Lock()
		res, changed, closed := r.results[key{g, id}], r.changed, r.closed
		var got result
		if res != nil {
			got = *res
		}
		r.mu.Unlock()
		if got.done {
			return got.digest, got.err
		}
		if closed {
			return slotstore.ReplicaDigest{}, errors.New("checks: the node is closing")
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if res == nil {
				return slotstore.ReplicaDigest{}, fmt.Errorf("checks: group %d's replica here has not reached check %d: %w", g, id, ctx.Err())
			}
			return slotstore.ReplicaDigest{}, fmt.Errorf("checks: still hashing group %d for check %d: %w", g, id, ctx.Err())
		}
	}
}

// work hashes the queued snapshots, one at a time, until Close.
func (r *Registry) work() {
	defer r.wg.Done()
	for {
		select {
		case <-r.life.Done():
			return
		case j := <-r.jobs:
			r.run(j)
		}
	}
}

func (r *Registry) run(j job) {
	start := r.cfg.Now()
	slots, err := Digest(r.life, j.snap, j.g, r.pace)
	_ = j.snap.Close()
	took := r.cfg.Now().Sub(start)
	if err != nil {
		r.cfg.Logger.Warn("state check failed", "group", j.g, "checks", j.ids, "err", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range j.ids {
		// Kept unless Keep dropped it meanwhile (a Wait then ends with
		// its own context).
		if res := r.results[key{j.g, id}]; res != nil && !res.done {
			res.digest.Slots, res.digest.TookMs, res.err, res.done = slots, took.Milliseconds(), err, true
		}
	}
	r.notify()
}

// Close stops the worker and closes the snapshots still queued; Waits
// then return at once.
func (r *Registry) Close() {
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	for {
		select {
		case j := <-r.jobs:
			_ = j.snap.Close()
		default:
			r.notify()
			return
		}
	}
}
