package watch

import "sync"

// Bell wakes the one goroutine that reads many streams — the watches of a
// multiplexed watch stream (issue 49) — and tells it which of them have
// something, so that a change wakes that goroutine once, whatever the
// number of watches it reads, and it polls only the streams that rang.
//
// A Bell is safe for concurrent use: the hub's publishers ring it, the
// reader takes what rang (Rung) after its channel (Ready) signals.
type Bell struct {
	ch   chan struct{}
	mu   sync.Mutex
	rung []*Sub
}

// NewBell returns a bell nothing has rung.
func NewBell() *Bell { return &Bell{ch: make(chan struct{}, 1)} }

// Ready is signalled after a stream of the bell rang.
func (b *Bell) Ready() <-chan struct{} { return b.ch }

// Rung returns the streams that rang since the last call, each once, in
// the order they first rang; nil if none. A stream closed since it rang
// is among them: its Poll answers ErrClosed.
func (b *Bell) Rung() []*Stream {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.rung) == 0 {
		return nil
	}
	out := make([]*Stream, len(b.rung))
	for i, s := range b.rung {
		s.rung = false
		out[i] = s.owner
	}
	clear(b.rung) // no closed subscriber kept reachable by the array
	b.rung = b.rung[:0]
	return out
}

// ring adds s's stream to the list (once until the next Rung) and wakes
// the reader.
func (b *Bell) ring(s *Sub) {
	b.mu.Lock()
	if !s.rung {
		s.rung = true
		b.rung = append(b.rung, s)
	}
	b.mu.Unlock()
	select {
	case b.ch <- struct{}{}:
	default:
	}
}
