package policy

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Backoff spaces out the leader transfers of one group after
// failures: the n-th failure in a row holds further transfers back for
// BackoffBase·2^(n-1), at most BackoffMax, with a random ±25 % so that the
// groups of a cluster do not retry in step. A success clears it.
type Backoff struct {
	mu   sync.Mutex
	rng  *rand.Rand
	byID map[slotstore.GroupID]BackoffState
}

// BackoffState is one group's back-off: failures in a row, and when the
// next transfer may start.
type BackoffState struct {
	Failures int
	Until    time.Time
}

// NewBackoff returns an empty back-off; seed drives the jitter.
func NewBackoff(seed uint64) *Backoff {
	return &Backoff{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), byID: map[slotstore.GroupID]BackoffState{}}
}

// Failed records a failed transfer of g at now and returns the new state.
func (b *Backoff) Failed(g slotstore.GroupID, now time.Time, p Leadership) BackoffState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.byID[g]
	s.Failures++
	d := p.BackoffBase << min(s.Failures-1, 16)
	if d > p.BackoffMax || d <= 0 {
		d = p.BackoffMax
	}
	d = time.Duration(float64(d) * (0.75 + 0.5*b.rng.Float64()))
	s.Until = now.Add(d)
	b.byID[g] = s
	return s
}

// Succeeded clears g's back-off.
func (b *Backoff) Succeeded(g slotstore.GroupID) {
	b.mu.Lock()
	delete(b.byID, g)
	b.mu.Unlock()
}

// State is g's back-off (zero: none).
func (b *Backoff) State(g slotstore.GroupID) BackoffState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byID[g]
}
