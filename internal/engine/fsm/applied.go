package fsm

import (
	"context"
	"sync"
)

// appliedWaiters wakes the readers waiting for the applied index to reach
// some value (WaitApplied). The channel exists only while someone waits, so
// an Update that nobody waits for pays one uncontended lock.
type appliedWaiters struct {
	mu sync.Mutex
	ch chan struct{} // closed at the next advance; nil: nobody waits
}

// wait returns the channel closed at the next advance.
func (w *appliedWaiters) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

// advanced wakes every waiter (after the applied index was stored).
func (w *appliedWaiters) advanced() {
	w.mu.Lock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
	w.mu.Unlock()
}

// WaitApplied returns once the replica has applied index (and committed it
// to Pebble), or with ctx's error. Safe from any goroutine.
func (s *StateMachine) WaitApplied(ctx context.Context, index uint64) error {
	for s.applied.Load() < index {
		ch := s.waiters.wait()
		if s.applied.Load() >= index { // advanced between the load and the wait
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
