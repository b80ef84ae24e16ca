package peer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Forwarded writes to one peer share peer requests.
//
// A write that reaches a node which does not lead its group is forwarded to
// the leader over peer RPC. One HTTP exchange per write cost more server CPU
// than the write itself (bench/README.md: 0.50 vs 0.28 ms per write sent to
// followers vs to the leader), so a node keeps, per peer, a bounded queue of
// forwarded commands and at most forwardInFlight batch requests out: a
// command that finds a free slot leaves at once (alone, through the plain
// propose endpoint), commands that arrive while the slots are busy leave
// together in the next request (propose-batch). The leader serves each
// command of a batch exactly as it serves a single one — concurrently,
// through its own proposer, refusing with a hint what it does not lead — and
// answers each with its own result or error. What the caller is told is
// unchanged: a definite refusal, a result, or, if the connection breaks
// after the request left, "may or may not have been applied".
//
// Concurrency contract: Forward may be called from any goroutine; a
// forwarder's send goroutines (at most forwardInFlight) are started by
// callers and exit when the queue is empty.
const (
	forwardInFlight   = 4         // batch requests out per peer
	forwardQueue      = 4096      // commands waiting per peer
	forwardBatchMax   = 128       // commands per batch request
	forwardBatchBytes = 512 << 10 // command bytes per batch request
)

type fwdOutcome struct {
	res   meta.Result
	route slotstore.Route
	err   error
	sent  bool // the command may have reached the leader
}

// A queued command is taken by one sender or abandoned, never both.
const (
	reqQueued    int32 = iota
	reqTaken           // in a request that left (or is leaving)
	reqAbandoned       // never sent: its caller gave up, or its deadline passed in the queue
)

type fwdReq struct {
	ctx   context.Context
	cmd   []byte
	state atomic.Int32
	done  chan fwdOutcome // buffered(1): a sender never blocks on a caller
}

func (r *fwdReq) context() context.Context { return r.ctx }

// forwarder batches the forwarded commands to one peer address.
type forwarder struct {
	c    *Client
	addr string
	sendQueue[*fwdReq]
}

// ForwardStats are the forwarding counters: batch requests sent and the
// commands they carried, and commands sent alone, one per peer request.
type ForwardStats struct {
	Batches, Batched, Singles uint64
}

// ForwardStats returns the client's forwarding counters.
func (c *Client) ForwardStats() ForwardStats {
	return ForwardStats{Batches: c.batches.Load(), Batched: c.batched.Load(), Singles: c.singles.Load()}
}

// Forward sends an encoded command to the leader at addr and waits for its
// result, batched with other commands forwarded to addr meanwhile. sent
// reports whether the command may have reached the leader (false: an error
// is a definite "not proposed there"). A caller whose ctx ends, or whose
// moved closes, while its command is still queued takes it out: it is never
// sent. (moved may be nil.)
func (c *Client) Forward(ctx context.Context, addr string, cmd []byte, moved <-chan struct{}) (meta.Result, slotstore.Route, bool, error) {
	f := queueFor(&c.mu, c.forwarders, addr, func() *forwarder { return &forwarder{c: c, addr: addr} })
	f.mu.Lock()
	if len(f.queue) == 0 && f.running == 0 {
		// Nothing waits and nothing is out: this one goes alone, from the
		// caller's goroutine; under load writes queue and leave in batches.
		f.running++
		f.mu.Unlock()
		f.c.singles.Add(1)
		res, route, sent, err := f.c.Propose(ctx, f.addr, cmd, 0)
		f.mu.Lock()
		f.running--
		if len(f.queue) > 0 && f.running < forwardInFlight {
			f.running++ // writes queued meanwhile behind this one
			go f.send()
		}
		f.mu.Unlock()
		return res, route, sent, err
	}
	r := &fwdReq{ctx: ctx, cmd: cmd, done: make(chan fwdOutcome, 1)}
	queued := f.pushLocked(r, forwardQueue, forwardInFlight, f.send)
	f.mu.Unlock()
	if !queued {
		return meta.Result{}, slotstore.Route{}, false, &slotstore.Error{Code: slotstore.CodeBusy, RetryAfter: 100 * time.Millisecond,
			Message: fmt.Sprintf("%d writes already wait to be forwarded to %s", forwardQueue, addr)}
	}
	for {
		select {
		case o := <-r.done:
			return o.res, o.route, o.sent, o.err
		case <-moved:
			if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
				return meta.Result{}, slotstore.Route{}, false, &slotstore.Error{Code: slotstore.CodeRouteNotReady,
					Message: "the group's leader moved before the write was forwarded; not sent"}
			}
			moved = nil // sent already: wait for its answer (or ctx)
		case <-ctx.Done():
			if r.state.CompareAndSwap(reqQueued, reqAbandoned) || r.state.Load() == reqAbandoned {
				return meta.Result{}, slotstore.Route{}, false, &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(),
					Message: "deadline passed before the write was forwarded; not sent"}
			}
			return meta.Result{}, slotstore.Route{}, true, &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(),
				Message: "deadline passed while forwarding to the leader; the write may or may not have been applied"}
		}
	}
}

// send sends batches until the queue is empty.
func (f *forwarder) send() {
	for {
		bytes := 0
		batch, ok := f.nextBatch(func(r *fwdReq, batch []*fwdReq) pick {
			if r.ctx.Err() != nil || r.state.Load() != reqQueued {
				if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
					r.done <- fwdOutcome{err: &slotstore.Error{Code: slotstore.CodeTimeout, Err: r.ctx.Err(),
						Message: "deadline passed before the write was forwarded; not sent"}}
				}
				return pickDrop
			}
			if len(batch) == forwardBatchMax || (len(batch) > 0 && bytes+len(r.cmd) > forwardBatchBytes) {
				return pickStop
			}
			if !r.state.CompareAndSwap(reqQueued, reqTaken) {
				return pickDrop // its caller gave up this moment
			}
			bytes += len(r.cmd)
			return pickTake
		})
		if !ok {
			return
		}
		if len(batch) == 1 {
			r := batch[0]
			f.c.singles.Add(1)
			res, route, sent, err := f.c.Propose(r.ctx, f.addr, r.cmd, 0)
			r.done <- fwdOutcome{res: res, route: route, err: err, sent: sent}
			continue
		}
		f.sendBatch(batch)
	}
}

// sendBatch sends one propose-batch request and answers its commands.
func (f *forwarder) sendBatch(batch []*fwdReq) {
	cmds := make([][]byte, len(batch))
	for i, r := range batch {
		cmds[i] = r.cmd
	}
	body := appendBatch(nil, cmds)
	ctx, cancel := context.WithDeadline(context.Background(), batchDeadline(batch, (*fwdReq).context, 5*time.Second))
	defer cancel()
	answer := func(o fwdOutcome) {
		for _, r := range batch {
			r.done <- o
		}
	}
	f.c.batches.Add(1)
	f.c.batched.Add(uint64(len(batch)))
	resp, sent, err := f.c.Call(ctx, http.MethodPost, f.addr, "propose-batch", body, nil)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		if sent && resp == nil {
			answer(fwdOutcome{sent: true, err: &slotstore.Error{Code: slotstore.CodeTimeout, Err: err, RetryAfter: time.Second,
				Message: "lost the connection to the leader; the write may or may not have been applied"}})
			return
		}
		answer(fwdOutcome{err: err}) // a definite refusal of the whole request: nothing was proposed
		return
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4*meta.MaxEntryBytes+1))
	if err != nil {
		answer(fwdOutcome{sent: true, err: &slotstore.Error{Code: slotstore.CodeTimeout, Err: err,
			Message: "lost the leader's answer; the write may or may not have been applied"}})
		return
	}
	outs, err := decodeBatchAnswers(raw, len(batch))
	if err != nil {
		answer(fwdOutcome{sent: true, err: slotstore.Wrap(slotstore.CodeInternal, err, "undecodable batch answer from the leader")})
		return
	}
	for i, r := range batch {
		outs[i].sent = true
		r.done <- outs[i]
	}
}
