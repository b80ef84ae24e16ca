package propose

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// fakeIndexer runs rounds the test releases one by one.
type fakeIndexer struct {
	started chan int   // round numbers, as they start
	release chan error // the result of the running round
	mu      sync.Mutex
	n       int
}

func newFakeIndexer() *fakeIndexer {
	return &fakeIndexer{started: make(chan int, 16), release: make(chan error)}
}

func (f *fakeIndexer) ReadIndex(ctx context.Context) error {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	f.started <- n
	select {
	case err := <-f.release:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func waitAsync(b *ReadBatcher, ctx context.Context) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- b.Wait(ctx) }()
	return ch
}

func mustStart(t *testing.T, f *fakeIndexer, want int) {
	t.Helper()
	select {
	case n := <-f.started:
		if n != want {
			t.Fatalf("round %d started, want %d", n, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("round %d did not start", want)
	}
}

// waitingFor polls until n reads wait for the next round (5 s at most).
func waitingFor(t *testing.T, b *ReadBatcher, n int) {
	t.Helper()
	testutil.WaitFor(t, 5*time.Second, time.Millisecond, func() (bool, string) {
		w := b.waiting()
		return w >= n, fmt.Sprintf("%d reads wait for the next round, want %d", w, n)
	})
}

func pending(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned early: %v", what, err)
	default:
	}
}

// TestReadBatcherRoundsStartAfterTheRead: a read is never answered by a
// round that was already running when it arrived; the reads that arrived
// during a round all share the next one; a failed round fails only its own
// reads.
func TestReadBatcherRoundsStartAfterTheRead(t *testing.T) {
	f := newFakeIndexer()
	b := NewReadBatcher(f, 5*time.Second)
	defer b.Close()
	ctx := context.Background()

	a := waitAsync(b, ctx)
	mustStart(t, f, 1)
	// Arrive while round 1 runs: they need round 2.
	var during []<-chan error
	for i := 0; i < 10; i++ {
		during = append(during, waitAsync(b, ctx))
	}
	waitingFor(t, b, 10) // all ten have joined the next round
	f.release <- nil
	if err := <-a; err != nil {
		t.Fatalf("read a: %v", err)
	}
	mustStart(t, f, 2)
	for _, ch := range during {
		pending(t, ch, "a read that arrived during round 1")
	}
	late := waitAsync(b, ctx)
	waitingFor(t, b, 1)
	f.release <- errors.New("round 2 failed")
	for _, ch := range during {
		if err := <-ch; err == nil || err.Error() != "round 2 failed" {
			t.Fatalf("a read of round 2: %v", err)
		}
	}
	mustStart(t, f, 3)
	pending(t, late, "a read that arrived during round 2")
	f.release <- nil
	if err := <-late; err != nil {
		t.Fatalf("late read: %v", err)
	}
	if rounds, reads := b.Stats(); rounds != 3 || reads != 12 {
		t.Fatalf("%d rounds for %d reads, want 3 for 12", rounds, reads)
	}
}

// TestReadBatcherDeadlineAndClose: a read whose context ends returns its
// error while the round goes on; close fails the waiting reads and stops the
// round goroutine.
func TestReadBatcherDeadlineAndClose(t *testing.T) {
	f := newFakeIndexer()
	b := NewReadBatcher(f, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	short := waitAsync(b, ctx)
	mustStart(t, f, 1)
	cancel()
	if err := <-short; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled read: %v", err)
	}
	next := waitAsync(b, context.Background())
	waitingFor(t, b, 1)
	b.Close() // cancels round 1; round 2 never starts
	if err := <-next; err == nil {
		t.Fatal("a read waiting at close succeeded")
	}
	if err := b.Wait(context.Background()); err == nil {
		t.Fatal("a read after close succeeded")
	}
}
