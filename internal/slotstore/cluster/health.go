package cluster

import (
	"math/rand/v2"
	"sync"
	"time"

	"slotmeta/internal/slotstore"
)

// Node health on the controller leader.
//
// The controller leader collects a status report from every node once per
// ObserveInterval. A node whose latest report is older than UnreachableAfter
// (a few intervals) is unreachable — shown so in the API and the console, and
// never a leader-transfer target. Once it reports again its healthy streak
// starts; until the streak is HoldDown long the node stays held down.
//
// The streaks are what this controller leader saw: they start over when it
// takes the leadership (a node it never saw unreachable has a streak since
// then and is not held down by it; the nodes' own reports of their replicas'
// disruptions cover what happened before, see disruption.go).

// nodeTrack is one node's reachability as this controller leader saw it.
type nodeTrack struct {
	gap          bool      // the node was seen unreachable
	unreachable  bool      // it is now
	healthySince time.Time // start of the current streak (gap only)
}

// healthBook holds the streaks; it lives inside the observer and shares its
// mutex (observer.mu).
type healthBook struct {
	leaderSince time.Time // when this node took the controller leadership; zero: not leading
	tracks      map[slotstore.NodeID]*nodeTrack
}

// lead starts a new book when this node has just taken the controller
// leadership (reports from an earlier stint are dropped with it).
func (o *observer) lead(now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.health.leaderSince.IsZero() {
		return
	}
	o.health = healthBook{leaderSince: now, tracks: map[slotstore.NodeID]*nodeTrack{}}
	o.reports = map[slotstore.NodeID]report{}
}

// stepDown ends the book: this node no longer leads the controller.
func (o *observer) stepDown() {
	o.mu.Lock()
	o.health.leaderSince = time.Time{}
	o.mu.Unlock()
}

// updateHealth moves every node's streak to now, from the report ages.
func (o *observer) updateHealth(now time.Time, nodes []slotstore.NodeID, unreachableAfter time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.health.leaderSince.IsZero() {
		return
	}
	for _, id := range nodes {
		t := o.health.tracks[id]
		if t == nil {
			t = &nodeTrack{}
			o.health.tracks[id] = t
		}
		r, ok := o.reports[id]
		down := !ok && now.Sub(o.health.leaderSince) > unreachableAfter || ok && now.Sub(r.receivedAt) > unreachableAfter
		switch {
		case down:
			t.gap, t.unreachable = true, true
		case t.unreachable && ok:
			t.unreachable, t.healthySince = false, r.receivedAt
		}
	}
}

// nodeHealth returns every node's health at now.
func (o *observer) nodeHealth(now time.Time, nodes []slotstore.NodeID, self slotstore.NodeID) []slotstore.NodeHealth {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]slotstore.NodeHealth, 0, len(nodes))
	for _, id := range nodes {
		h := slotstore.NodeHealth{Node: id, Health: slotstore.NodeUnknown, ReportAgeMs: -1, HealthyForMs: -1, Aggregator: self}
		r, ok := o.reports[id]
		if ok {
			h.ReportAgeMs = now.Sub(r.receivedAt).Milliseconds()
		}
		t := o.health.tracks[id]
		switch {
		case t != nil && t.unreachable:
			h.Health = slotstore.NodeUnreachable
		case ok && t != nil && t.gap:
			h.Health, h.HealthyForMs = slotstore.NodeReachable, now.Sub(t.healthySince).Milliseconds()
		case ok:
			h.Health, h.HealthyForMs = slotstore.NodeReachable, now.Sub(o.health.leaderSince).Milliseconds()
		}
		out = append(out, h)
	}
	return out
}

// healthyFor returns how long node has reported without a gap, and whether
// this controller leader ever saw it unreachable (false: no gap seen, the
// duration is meaningless). An unreachable node has a zero streak.
func (o *observer) healthyFor(now time.Time, node slotstore.NodeID) (time.Duration, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.health.tracks[node]
	if t == nil || !t.gap {
		return 0, false
	}
	if t.unreachable {
		return 0, true
	}
	return now.Sub(t.healthySince), true
}

// transferBackoff spaces out the leader transfers of one group after
// failures: the n-th failure in a row holds further transfers back for
// BackoffBase·2^(n-1), at most BackoffMax, with a random ±25 % so that the
// groups of a cluster do not retry in step. A success clears it.
type transferBackoff struct {
	mu   sync.Mutex
	rng  *rand.Rand
	byID map[slotstore.GroupID]backoffState
}

type backoffState struct {
	failures int
	until    time.Time
}

func newTransferBackoff(seed uint64) *transferBackoff {
	return &transferBackoff{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), byID: map[slotstore.GroupID]backoffState{}}
}

// failed records a failed transfer of g at now and returns the new state.
func (b *transferBackoff) failed(g slotstore.GroupID, now time.Time, p LeadershipPolicy) backoffState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.byID[g]
	s.failures++
	d := p.BackoffBase << min(s.failures-1, 16)
	if d > p.BackoffMax || d <= 0 {
		d = p.BackoffMax
	}
	d = time.Duration(float64(d) * (0.75 + 0.5*b.rng.Float64()))
	s.until = now.Add(d)
	b.byID[g] = s
	return s
}

// succeeded clears g's back-off.
func (b *transferBackoff) succeeded(g slotstore.GroupID) {
	b.mu.Lock()
	delete(b.byID, g)
	b.mu.Unlock()
}

// state is g's back-off (zero: none).
func (b *transferBackoff) state(g slotstore.GroupID) backoffState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byID[g]
}
