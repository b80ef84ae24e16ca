package heat

import (
	"math"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Rate is a measured load in operations per second.
type Rate struct {
	Reads, Writes float64
}

// HalfLife is how fast rates follow a change of load: after one half-life
// a rate has moved half way to the new level.
const HalfLife = 15 * time.Second

// Tracker turns the nodes' successive counts into per-slot rates.
type Tracker struct {
	mu    sync.Mutex
	nodes map[slotstore.NodeID]*series
	cols  columns // the heat map's
}

type series struct {
	at            time.Time
	reads, writes []uint64
	rates         [slotstore.HashSlotCount]Rate
	seen          bool // rates hold at least one interval
}

// NewTracker returns an empty tracker that keeps the last keep columns of
// step for the heat map (0: DefaultStep, DefaultColumns).
func NewTracker(step time.Duration, keep int) *Tracker {
	if step <= 0 {
		step = DefaultStep
	}
	if keep <= 0 {
		keep = DefaultColumns
	}
	return &Tracker{nodes: map[slotstore.NodeID]*series{}, cols: columns{step: step, keep: keep}}
}

// Heat returns the heat map's columns, oldest first.
func (t *Tracker) Heat() slotstore.SlotHeat {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cols.heat()
}

// Observe records node's counts as of at (the time the controller received
// them). Counts of nil mean nothing was counted yet.
func (t *Tracker) Observe(node slotstore.NodeID, at time.Time, reads, writes []uint64) {
	if reads == nil {
		reads = make([]uint64, slotstore.HashSlotCount)
	}
	if writes == nil {
		writes = make([]uint64, slotstore.HashSlotCount)
	}
	if len(reads) != slotstore.HashSlotCount || len(writes) != slotstore.HashSlotCount {
		return // a malformed report changes nothing
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.nodes[node]
	if !ok || !at.After(s.at) {
		if !ok {
			t.nodes[node] = &series{at: at, reads: reads, writes: writes}
		}
		return
	}
	dt := at.Sub(s.at).Seconds()
	alpha := 1 - math.Exp2(-dt/HalfLife.Seconds())
	var dr, dw [slotstore.HashSlotCount]float64
	for i := range s.rates {
		dr[i], dw[i] = delta(s.reads[i], reads[i]), delta(s.writes[i], writes[i])
		r := Rate{Reads: dr[i] / dt, Writes: dw[i] / dt}
		if !s.seen {
			s.rates[i] = r
			continue
		}
		s.rates[i].Reads += alpha * (r.Reads - s.rates[i].Reads)
		s.rates[i].Writes += alpha * (r.Writes - s.rates[i].Writes)
	}
	s.at, s.reads, s.writes, s.seen = at, reads, writes, true
	t.cols.add(at, &dr, &dw)
}

// delta is the count added since old; a count that fell (a restart) counts
// from zero.
func delta(old, now uint64) float64 {
	if now < old {
		return float64(now)
	}
	return float64(now - old)
}

// Forget drops the series of nodes not in keep (removed or gone).
func (t *Tracker) Forget(keep func(slotstore.NodeID) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.nodes {
		if !keep(id) {
			delete(t.nodes, id)
		}
	}
}

// Slots returns every hash slot's rate summed over the nodes whose latest
// counts are at most maxAge old at now (an older series says nothing about
// the present).
func (t *Tracker) Slots(now time.Time, maxAge time.Duration) [slotstore.HashSlotCount]Rate {
	var out [slotstore.HashSlotCount]Rate
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.nodes {
		if !s.seen || now.Sub(s.at) > maxAge {
			continue
		}
		for i, r := range s.rates {
			out[i].Reads += r.Reads
			out[i].Writes += r.Writes
		}
	}
	return out
}

// Node returns node's own rate (what its API served), summed over slots.
func (t *Tracker) Node(node slotstore.NodeID, now time.Time, maxAge time.Duration) Rate {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out Rate
	s, ok := t.nodes[node]
	if !ok || !s.seen || now.Sub(s.at) > maxAge {
		return out
	}
	for _, r := range s.rates {
		out.Reads += r.Reads
		out.Writes += r.Writes
	}
	return out
}
