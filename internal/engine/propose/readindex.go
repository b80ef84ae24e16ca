package propose

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
)

// Linearizable reads of one group on one node share ReadIndex rounds.
//
// A read is linearizable once the local replica has applied everything that
// was committed when the read arrived. A ReadIndex round that *starts after*
// the read arrived proves exactly that when it completes (dragonboat completes
// it only once the replica has applied up to the confirmed commit index), so
// every read waiting when a round starts may be answered from the local state
// machine after it — one round, one heartbeat exchange with a quorum, for all
// of them. The batcher keeps at most one round in flight per group: reads
// that arrive during a round wait for the next one, which starts as soon as
// the current one ends. Under load a round serves every read that arrived
// during the previous round; alone, a read costs one round as before.
//
// Concurrency contract: Wait may be called from any goroutine. The batcher's
// one round goroutine is started by a waiter when no round runs and exits
// when no read waits; Close cancels a running round and waits for it.

// ReadIndexer runs one ReadIndex round for a group.
type ReadIndexer interface {
	ReadIndex(ctx context.Context) error
}

// NowReader is a ReadIndexer that can tell a read needs no round at all
// (LeasedReadIndex.ReadNow): the batcher then answers it in the caller's
// goroutine, with no hand-off to the round goroutine.
type NowReader interface {
	ReadNow() bool
}

// readRound is one ReadIndex round and the reads waiting for it.
type readRound struct {
	done    chan struct{} // closed when err is set
	err     error
	waiters int // reads that joined (guarded by the batcher's mu)
}

type ReadBatcher struct {
	ri      ReadIndexer
	now     NowReader     // ri, if it is one; nil otherwise
	timeout time.Duration // bound of one round

	mu      sync.Mutex
	next    *readRound // the round arriving reads join; nil: none yet
	running bool
	closed  atomic.Bool     // set under mu; read without it by the NowReader path
	ctx     context.Context // canceled by close
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	rounds, reads uint64 // guarded by mu; for tests and metrics
}

func NewReadBatcher(ri ReadIndexer, timeout time.Duration) *ReadBatcher {
	ctx, cancel := context.WithCancel(context.Background())
	now, _ := ri.(NowReader)
	return &ReadBatcher{ri: ri, now: now, timeout: timeout, ctx: ctx, cancel: cancel}
}

// Wait returns once a ReadIndex round that started after the call has
// completed (nil), failed (its error), or ctx ended (ctx's error) — or at
// once (nil) when the indexer says no round is needed (NowReader).
func (b *ReadBatcher) Wait(ctx context.Context) error {
	if b.now != nil && !b.closed.Load() && b.now.ReadNow() {
		return nil
	}
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		return dragonboat.ErrShardClosed
	}
	if b.next == nil {
		b.next = &readRound{done: make(chan struct{})}
	}
	r := b.next
	r.waiters++
	b.reads++
	if !b.running {
		b.running = true
		b.wg.Add(1)
		go b.run()
	}
	b.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run starts rounds while reads wait for one.
func (b *ReadBatcher) run() {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		r := b.next
		if r == nil || b.closed.Load() {
			b.running = false
			b.mu.Unlock()
			if r != nil {
				r.err = dragonboat.ErrShardClosed
				close(r.done)
			}
			return
		}
		b.next = nil // reads from now on wait for the following round
		b.rounds++
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
		r.err = b.ri.ReadIndex(ctx)
		cancel()
		close(r.done)
	}
}

// waiting is the number of reads that wait for the next round.
func (b *ReadBatcher) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == nil {
		return 0
	}
	return b.next.waiters
}

// Stats returns the rounds run and the reads served so far.
func (b *ReadBatcher) Stats() (rounds, reads uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rounds, b.reads
}

// Close fails waiting reads and stops the round goroutine.
func (b *ReadBatcher) Close() {
	b.mu.Lock()
	b.closed.Store(true)
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// NodeHostReadIndex runs ReadIndex rounds on a NodeHost's replica of a shard.
//
// A round dragonboat drops (no leader known, or a new leader that has not
// yet committed an entry of its term) is run again, and so is a round still
// waiting when the group's leader changes — it was most likely sent to the
// old leader, which may never answer. A round that starts later still
// starts after every read waiting for it arrived, so retrying keeps the
// reads linearizable; the round's deadline bounds the retries.
type NodeHostReadIndex struct {
	NH      *dragonboat.NodeHost
	Shard   uint64
	Changed func() context.Context // cancelled at the group's next leader change
}

func (r NodeHostReadIndex) ReadIndex(ctx context.Context) error {
	pause := time.Millisecond
	for {
		change := r.Changed()
		err := r.once(ctx, change)
		if !errors.Is(err, dragonboat.ErrShardNotReady) && !errors.Is(err, errLeaderChanged) {
			return err
		}
		if errors.Is(err, dragonboat.ErrShardNotReady) && !Sleep(ctx, change, pause) {
			return err
		}
		pause = min(2*pause, dropRetry)
	}
}

// errLeaderChanged ends a wait that the group's leader change made moot.
var errLeaderChanged = errors.New("the group's leader changed")

func (r NodeHostReadIndex) once(ctx, change context.Context) error {
	d, ok := ctx.Deadline()
	if !ok {
		return dragonboat.ErrTimeoutTooSmall
	}
	rs, err := r.NH.ReadIndex(r.Shard, time.Until(d))
	if err != nil {
		return err
	}
	defer rs.Release()
	select {
	case res := <-rs.AppliedC():
		switch {
		case res.Completed():
			return nil
		case res.Dropped():
			return dragonboat.ErrShardNotReady
		case res.Terminated():
			return dragonboat.ErrShardClosed
		case res.Rejected():
			return dragonboat.ErrRejected
		case res.Aborted():
			return dragonboat.ErrAborted
		default:
			return dragonboat.ErrTimeout
		}
	case <-change.Done():
		return errLeaderChanged
	case <-ctx.Done():
		return ctx.Err()
	}
}
