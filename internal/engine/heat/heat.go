// Package heat measures how busy each hash slot is: every node counts the
// reads and writes its API serves per hash slot (Counters), reports the
// counts with its status, and the controller leader turns successive reports
// into rates (Tracker) — the load the balancer evens out — and into the
// operations of each step (the console's heat map, columns.go).
//
// Model. A node counts an operation where a client sent it (the node that
// resolved its route), once, whether it was served locally or forwarded;
// the cluster-wide load of a slot is therefore the sum over nodes. Counts
// only grow while a node runs; a report whose count fell (the node
// restarted) starts that node's series again. Rates are exponentially
// weighted (HalfLife), so a short burst moves them a little and a lasting
// change moves them fully within a few half-lives — the short history the
// balancer decides from.
//
// Concurrency contract. Counters is safe for concurrent use (atomic adds,
// no lock on the serving path). Tracker is safe for concurrent use (one
// mutex); it owns no goroutine.
package heat

import (
	"context"
	"sync/atomic"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Counters are one node's per-hash-slot operation counts since it started.
type Counters struct {
	reads, writes [slotstore.HashSlotCount]atomic.Uint64
}

// Read counts one read of hash slot hs.
func (c *Counters) Read(hs slotstore.HashSlot) {
	if c != nil && hs.Valid() {
		c.reads[hs].Add(1)
	}
}

// Write counts one write of hash slot hs.
func (c *Counters) Write(hs slotstore.HashSlot) {
	if c != nil && hs.Valid() {
		c.writes[hs].Add(1)
	}
}

// Snapshot returns the counts, indexed by hash slot; nil slices when
// nothing was counted (a status report stays small on an idle node).
func (c *Counters) Snapshot() (reads, writes []uint64) {
	if c == nil {
		return nil, nil
	}
	r, w := make([]uint64, slotstore.HashSlotCount), make([]uint64, slotstore.HashSlotCount)
	var any bool
	for i := range r {
		r[i], w[i] = c.reads[i].Load(), c.writes[i].Load()
		any = any || r[i] != 0 || w[i] != 0
	}
	if !any {
		return nil, nil
	}
	return r, w
}

// Totals returns the reads and writes counted, summed over the slots.
func (c *Counters) Totals() (reads, writes uint64) {
	if c == nil {
		return 0, 0
	}
	for i := range c.reads {
		reads += c.reads[i].Load()
		writes += c.writes[i].Load()
	}
	return reads, writes
}

type quietKey struct{}

// Quiet marks ctx as the node's own traffic (slot-move copies, outbox
// projections): not what clients load the slots with, so not counted.
func Quiet(ctx context.Context) context.Context { return context.WithValue(ctx, quietKey{}, true) }

// Counted reports whether operations under ctx count (not Quiet).
func Counted(ctx context.Context) bool { return ctx.Value(quietKey{}) == nil }
