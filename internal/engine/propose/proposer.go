package propose

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Replicator proposes one entry to a group and waits for its per-command
// results (one per command of the entry) or an error. A *slotstore.Error
// says how the entry failed; on a timeout its commands may still apply.
type Replicator interface {
	Replicate(ctx context.Context, entry []byte) ([]meta.Result, error)
}

// Config bounds a proposer. The zero value takes the defaults.
type Config struct {
	QueueSize        int           // commands waiting to be batched (default 1024: four full entries behind the ones in flight; allocated per group)
	MaxBatchCommands int           // commands per Raft entry (default 256)
	MaxBatchBytes    int           // encoded bytes per Raft entry (default 1 MiB)
	MaxWait          time.Duration // how long a batch may wait for more commands while others are in flight (default 0: never wait)
	MaxInFlight      int           // entries proposed and not yet answered (default 4)
	ProposalTimeout  time.Duration // upper bound for one entry (default 5s)
}

// EnsureDefaults fills zero fields.
func (c *Config) EnsureDefaults() {
	if c.QueueSize <= 0 {
		c.QueueSize = 1024
	}
	if c.MaxBatchCommands <= 0 {
		c.MaxBatchCommands = 256
	}
	c.MaxBatchCommands = min(c.MaxBatchCommands, meta.MaxCommandsPerEntry)
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = 1 << 20
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 4
	}
	if c.ProposalTimeout <= 0 {
		c.ProposalTimeout = 5 * time.Second
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c.EnsureDefaults()
	if c.MaxBatchBytes > meta.MaxEntryBytes {
		return fmt.Errorf("proposer: max batch bytes %d over the entry limit %d", c.MaxBatchBytes, meta.MaxEntryBytes)
	}
	if c.MaxWait < 0 || c.MaxWait > time.Second {
		return fmt.Errorf("proposer: max wait %v outside [0, 1s]", c.MaxWait)
	}
	return nil
}

// BatchObserver receives the size of every proposed entry (for metrics).
type BatchObserver func(commands, bytes int)

type outcome struct {
	res meta.Result
	err error
}

type request struct {
	ctx  context.Context
	data []byte
	done chan outcome // buffered(1): the proposer never blocks on a caller
}

// Proposer coalesces one group's commands into Raft entries.
//
// Callers Submit encoded commands into a bounded queue; a full queue is
// refused at once (queue_full). One loop goroutine takes an in-flight slot,
// then drains the queue into one entry bounded by MaxBatchCommands and
// MaxBatchBytes, and hands it to a goroutine that replicates it and answers
// every caller with its own result. While MaxInFlight entries are out, the
// queue fills and the next entry is larger: batching adapts to load without
// delaying a lone command. A lone command — nothing queued, no entry in
// flight — is proposed by its caller's own goroutine, sparing it the two
// hand-offs through the loop; under load everything goes through the queue,
// where it is batched. A command whose caller gave up before it was proposed is
// answered timeout and never proposed. Every submitted command gets exactly
// one answer.
//
// The proposer owns its goroutines; Close stops them, waits for commands
// being proposed by their callers, and answers everything still queued with
// an error.
type Proposer struct {
	cfg     Config
	rep     Replicator
	observe BatchObserver
	queue   chan *request
	slots   chan struct{} // one token per entry in flight (loop and callers)
	stop    chan struct{}
	closing sync.RWMutex // callers proposing directly hold it shared; Close takes it
	gate    sync.RWMutex // every entry holds it shared while it is proposed; Hold takes it
	wg      sync.WaitGroup
	once    sync.Once
	direct  atomic.Uint64 // commands proposed by their callers (for tests)
}

// New starts a proposer over rep.
func New(cfg Config, rep Replicator, observe BatchObserver) *Proposer {
	cfg.EnsureDefaults()
	p := &Proposer{cfg: cfg, rep: rep, observe: observe, queue: make(chan *request, cfg.QueueSize),
		slots: make(chan struct{}, cfg.MaxInFlight), stop: make(chan struct{})}
	p.wg.Add(1)
	go p.run()
	return p
}

// QueueDepth is the number of commands waiting.
func (p *Proposer) QueueDepth() int { return len(p.queue) }

// errClosed answers commands submitted to (or queued in) a closed proposer.
var errClosed = &slotstore.Error{Code: slotstore.CodeBusy, Message: "group is shutting down on this node", RetryAfter: time.Second}

// Submit queues one encoded command and waits for its result.
func (p *Proposer) Submit(ctx context.Context, cmd []byte) (meta.Result, error) {
	if len(cmd) > p.cfg.MaxBatchBytes {
		return meta.Result{}, slotstore.Errorf(slotstore.CodePayloadTooLarge, "command of %d bytes over the %d-byte entry bound", len(cmd), p.cfg.MaxBatchBytes)
	}
	select {
	case <-p.stop:
		return meta.Result{}, errClosed
	default:
	}
	req := &request{ctx: ctx, data: cmd, done: make(chan outcome, 1)}
	if len(p.queue) == 0 && len(p.slots) <= 1 { // nothing waits, nothing in flight but the idle loop's slot
		select {
		case p.slots <- struct{}{}:
			return p.proposeDirect(req)
		default:
		}
	}
	select {
	case p.queue <- req:
	default:
		return meta.Result{}, &slotstore.Error{Code: slotstore.CodeQueueFull,
			Message: fmt.Sprintf("proposal queue full (%d commands)", p.cfg.QueueSize), RetryAfter: 100 * time.Millisecond}
	}
	select {
	case o := <-req.done:
		return o.res, o.err
	case <-ctx.Done():
		return meta.Result{}, &slotstore.Error{Code: slotstore.CodeTimeout,
			Message: "deadline passed before the write was answered; it may or may not have been applied", Err: ctx.Err()}
	}
}

// proposeDirect proposes req alone on the caller's goroutine, holding the
// in-flight slot the caller took.
func (p *Proposer) proposeDirect(req *request) (meta.Result, error) {
	defer func() { <-p.slots }()
	p.closing.RLock()
	defer p.closing.RUnlock()
	select {
	case <-p.stop:
		return meta.Result{}, errClosed
	default:
	}
	if err := req.ctx.Err(); err != nil {
		return meta.Result{}, &slotstore.Error{Code: slotstore.CodeTimeout, Message: "deadline passed before the write was proposed; not proposed", Err: err}
	}
	p.direct.Add(1)
	p.replicate([]*request{req})
	o := <-req.done
	return o.res, o.err
}

// Hold keeps the proposer from proposing anything new until release is
// called or max has passed, once every entry in flight has been answered
// (or ctx ends: then it returns ctx's error and holds nothing). Commands
// keep queueing meanwhile, within the queue's bound, and are proposed in
// order once released. A leader transfer holds the group's proposer so that
// the target has applied everything when it is asked to take over:
// dragonboat lets no replica campaign — a transfer's campaign included —
// while it has committed entries it has not applied, so a target that is
// always a few entries behind under load never takes over, and every
// attempt drops the group's proposals for an election timeout.
func (p *Proposer) Hold(ctx context.Context, max time.Duration) (release func(), err error) {
	locked := make(chan struct{})
	go func() {
		p.gate.Lock()
		close(locked)
	}()
	var once sync.Once
	unlock := func() { once.Do(p.gate.Unlock) }
	select {
	case <-locked:
	case <-ctx.Done():
		go func() { <-locked; unlock() }() // taken late: give it back at once
		return nil, ctx.Err()
	}
	t := time.AfterFunc(max, unlock)
	return func() {
		t.Stop()
		unlock()
	}, nil
}

// Close stops the proposer, waits for in-flight entries, and answers every
// queued command with an error.
func (p *Proposer) Close() {
	p.once.Do(func() { close(p.stop) })
	p.closing.Lock()
	//lint:ignore SA2001 taking the lock waited for every caller proposing directly to finish
	p.closing.Unlock()
	p.wg.Wait()
	for {
		select {
		case req := <-p.queue:
			req.done <- outcome{err: errClosed}
		default:
			return
		}
	}
}

func (p *Proposer) run() {
	defer p.wg.Done()
	slots := p.slots
	var inflight sync.WaitGroup
	defer inflight.Wait()
	var carry *request // did not fit the previous batch; starts the next one
	defer func() {
		if carry != nil {
			carry.done <- outcome{err: errClosed}
		}
	}()
	for {
		select {
		case slots <- struct{}{}:
		case <-p.stop:
			return
		}
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-p.queue:
			case <-p.stop:
				<-slots
				return
			}
		}
		var batch []*request
		batch, carry = p.collect(first, len(slots) > 1)
		if len(batch) == 0 {
			<-slots
			continue
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer func() { <-slots }()
			p.replicate(batch)
		}()
	}
}

// collect drains the queue into one batch starting with first, and returns
// the command that did not fit (if any) to start the next batch. It waits up
// to MaxWait for more only when other entries are in flight (busy), so a
// lone command is never delayed. Commands whose caller already gave up are
// answered here and left out.
func (p *Proposer) collect(first *request, busy bool) (batch []*request, carry *request) {
	batch = make([]*request, 0, min(p.cfg.MaxBatchCommands, 1+len(p.queue)))
	bytes := 0
	add := func(r *request) bool {
		if err := r.ctx.Err(); err != nil {
			r.done <- outcome{err: &slotstore.Error{Code: slotstore.CodeTimeout, Message: "deadline passed while queued; not proposed", Err: err}}
			return true
		}
		if len(batch) > 0 && bytes+len(r.data)+8 > p.cfg.MaxBatchBytes {
			return false
		}
		batch = append(batch, r)
		bytes += len(r.data) + 8
		return true
	}
	add(first)
	var timer <-chan time.Time
	if busy && p.cfg.MaxWait > 0 {
		t := time.NewTimer(p.cfg.MaxWait)
		defer t.Stop()
		timer = t.C
	}
	for len(batch) < p.cfg.MaxBatchCommands {
		var r *request
		select {
		case r = <-p.queue:
		default:
			if timer == nil {
				return batch, nil
			}
			select {
			case r = <-p.queue:
			case <-timer:
				return batch, nil
			case <-p.stop:
				return batch, nil
			}
		}
		if !add(r) {
			return batch, r
		}
	}
	return batch, nil
}

func (p *Proposer) replicate(batch []*request) {
	p.gate.RLock()
	defer p.gate.RUnlock()
	cmds := make([][]byte, len(batch))
	deadline := time.Now().Add(p.cfg.ProposalTimeout)
	latest := time.Time{}
	for i, r := range batch {
		cmds[i] = r.data
		if d, ok := r.ctx.Deadline(); ok && d.After(latest) {
			latest = d
		}
	}
	if !latest.IsZero() && latest.Before(deadline) {
		deadline = latest
	}
	entry := meta.EncodeEntry(cmds)
	if p.observe != nil {
		p.observe(len(batch), len(entry))
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	results, err := p.rep.Replicate(ctx, entry)
	cancel()
	if err == nil && len(results) != len(batch) {
		err = slotstore.Errorf(slotstore.CodeInternal, "entry of %d commands answered with %d results", len(batch), len(results))
	}
	for i, r := range batch {
		if err != nil {
			r.done <- outcome{err: err}
			continue
		}
		r.done <- outcome{res: results[i]}
	}
}
