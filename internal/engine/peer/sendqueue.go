package peer

import (
	"context"
	"sync"
	"time"
)

// A queue of requests to one peer, sent in batches: forwarded writes
// (forward.go) and read-index questions (readindex.go) each keep one per
// peer address. Requests wait in a bounded queue; at most a few senders —
// goroutines that callers start, which exit when the queue is empty —
// take them out in batches.
type sendQueue[R any] struct {
	mu      sync.Mutex
	queue   []R
	running int // senders draining the queue
}

// pushLocked, with q.mu held, queues r and starts send in a goroutine when
// fewer than inFlight senders run. It returns false, queueing nothing, when
// limit requests wait already.
func (q *sendQueue[R]) pushLocked(r R, limit, inFlight int, send func()) bool {
	if len(q.queue) >= limit {
		return false
	}
	q.queue = append(q.queue, r)
	if q.running < inFlight {
		q.running++
		go send()
	}
	return true
}

// A sender's verdict on a queued request, in nextBatch.
type pick int

const (
	pickTake pick = iota // the request joins the batch
	pickDrop             // the request leaves the queue, not in the batch (its caller is answered, or gave up)
	pickStop             // the batch is full: this request and the ones after it stay queued
)

// nextBatch takes the next batch off the queue: choose, called under q.mu
// for each queued request in order with the batch so far, decides. An
// empty batch stops the sender: it is no longer counted as running, and
// ok is false.
func (q *sendQueue[R]) nextBatch(choose func(r R, batch []R) pick) (batch []R, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	rest := q.queue[:0]
	for i, r := range q.queue {
		p := choose(r, batch)
		if p == pickStop {
			rest = append(rest, q.queue[i:]...)
			break
		}
		if p == pickTake {
			batch = append(batch, r)
		}
	}
	clear(q.queue[len(rest):])
	q.queue = rest
	if len(batch) == 0 {
		q.running--
		return nil, false
	}
	return batch, true
}

// queueFor returns the batcher of addr in m (guarded by mu), made by mk the
// first time.
func queueFor[B any](mu *sync.Mutex, m map[string]*B, addr string, mk func() *B) *B {
	mu.Lock()
	defer mu.Unlock()
	b := m[addr]
	if b == nil {
		b = mk()
		m[addr] = b
	}
	return b
}

// batchDeadline is the deadline of a batch request: the latest of its
// requests' (ctxOf gives each one's context), or def from now when none has
// one.
func batchDeadline[R any](batch []R, ctxOf func(R) context.Context, def time.Duration) time.Time {
	latest := time.Time{}
	for _, r := range batch {
		if d, ok := ctxOf(r).Deadline(); ok && d.After(latest) {
			latest = d
		}
	}
	if latest.IsZero() {
		latest = time.Now().Add(def)
	}
	return latest
}
