package fsm_test

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitApplied: a wait for an index already applied returns at once; a
// wait for a later one returns when an Update reaches it (not before), and
// a wait that ends first returns its context's error.
func TestWaitApplied(t *testing.T) {
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	apply(t, s, 1, putKV("a", "1"))
	if err := s.WaitApplied(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitApplied(context.Background(), 3) }()
	apply(t, s, 2, putKV("a", "2"))
	select {
	case err := <-done:
		t.Fatalf("the wait for index 3 returned at index 2: %v", err)
	case <-time.After(20 * time.Millisecond): // long enough for a wrong wake to show
	}
	apply(t, s, 3, putKV("a", "3"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := s.WaitApplied(ctx, 10); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait past the deadline returned %v", err)
	}
}
