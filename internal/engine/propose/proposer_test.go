package propose

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// fakeReplicator answers each command with its own bytes as the message, so
// a test can check every caller got its own result. It can be gated to hold
// entries in flight.
type fakeReplicator struct {
	mu      sync.Mutex
	entries [][][]byte
	gate    chan struct{} // if non-nil, each Replicate waits for a token
	err     error
}

func (f *fakeReplicator) Replicate(ctx context.Context, entry []byte) ([]meta.Result, error) {
	cmds, err := meta.DecodeEntry(entry)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.entries = append(f.entries, cmds)
	f.mu.Unlock()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, &slotstore.Error{Code: slotstore.CodeTimeout, Message: "gate"}
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	out := make([]meta.Result, len(cmds))
	for i, c := range cmds {
		out[i] = meta.Result{Message: string(c)}
	}
	return out, nil
}

func (f *fakeReplicator) batches() [][][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][][]byte(nil), f.entries...)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestProposerEveryCommandGetsItsOwnAnswer(t *testing.T) {
	rep := &fakeReplicator{}
	var entries, cmds atomic.Int64
	p := New(Config{MaxBatchCommands: 16, MaxInFlight: 2}, rep, func(c, _ int) {
		entries.Add(1)
		cmds.Add(int64(c))
	})
	defer p.Close()
	var wg sync.WaitGroup
	const n = 500
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			want := fmt.Sprintf("cmd-%d", i)
			res, err := p.Submit(ctxT(t), []byte(want))
			if err != nil || res.Message != want {
				errs <- fmt.Errorf("command %d: got %q, %v", i, res.Message, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if cmds.Load() != n {
		t.Fatalf("%d commands proposed, want %d", cmds.Load(), n)
	}
	for _, b := range rep.batches() {
		if len(b) > 16 {
			t.Fatalf("entry of %d commands over the bound 16", len(b))
		}
	}
	t.Logf("%d entries for %d commands", entries.Load(), n)
}

func TestProposerByteBoundKeepsOrder(t *testing.T) {
	rep := &fakeReplicator{gate: make(chan struct{})}
	p := New(Config{MaxBatchBytes: 100, MaxInFlight: 1}, rep, nil)
	defer p.Close()
	// The first command occupies the only in-flight slot; the rest queue up.
	var wg sync.WaitGroup
	submit := func(s string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Submit(ctxT(t), []byte(s)); err != nil {
				t.Error(err)
			}
		}()
	}
	submit("first")
	waitFor(t, func() bool { return len(rep.batches()) == 1 })
	for i := 0; i < 6; i++ {
		submit(fmt.Sprintf("%02d-%s", i, string(make([]byte, 30))))
		waitFor(t, func() bool { return p.QueueDepth() == i+1 })
	}
	close(rep.gate) // release the first entry and every later one
	wg.Wait()
	var order []string
	batches := rep.batches()[1:]
	if len(batches) < 3 {
		t.Fatalf("6 commands of 38 bytes under a 100-byte bound went out in %d entries", len(batches))
	}
	for _, b := range batches {
		size := 0
		for _, c := range b {
			size += len(c) + 8
			order = append(order, string(c[:2]))
		}
		if size > 100 {
			t.Fatalf("entry of %d bytes over the 100-byte bound", size)
		}
	}
	for i, o := range order {
		if o != fmt.Sprintf("%02d", i) {
			t.Fatalf("commands out of order: %v", order)
		}
	}
}

func TestProposerQueueFull(t *testing.T) {
	rep := &fakeReplicator{gate: make(chan struct{})}
	p := New(Config{QueueSize: 2, MaxInFlight: 1}, rep, nil)
	var wg sync.WaitGroup
	results := make(chan error, 3)
	submit := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Submit(ctxT(t), []byte("x"))
			results <- err
		}()
	}
	submit()
	waitFor(t, func() bool { return len(rep.batches()) == 1 })
	submit()
	submit()
	waitFor(t, func() bool { return p.QueueDepth() == 2 })
	_, err := p.Submit(ctxT(t), []byte("overflow"))
	var se *slotstore.Error
	if !errors.As(err, &se) || se.Code != slotstore.CodeQueueFull || se.RetryAfter <= 0 {
		t.Fatalf("overflow: %v, want queue_full with Retry-After", err)
	}
	close(rep.gate) // release everything
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Fatalf("queued command: %v", err)
		}
	}
	p.Close()
}

func TestProposerExpiredCommandIsNotProposed(t *testing.T) {
	rep := &fakeReplicator{gate: make(chan struct{})}
	p := New(Config{MaxInFlight: 1}, rep, nil)
	defer p.Close()
	go func() { _, _ = p.Submit(ctxT(t), []byte("blocker")) }()
	waitFor(t, func() bool { return len(rep.batches()) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := p.Submit(ctx, []byte("late"))
	if slotstore.ErrorCode(err) != slotstore.CodeTimeout {
		t.Fatalf("got %v, want timeout", err)
	}
	close(rep.gate)
	// The next command proves the loop moved past "late" without proposing it.
	if _, err := p.Submit(ctxT(t), []byte("after")); err != nil {
		t.Fatal(err)
	}
	for _, b := range rep.batches() {
		for _, c := range b {
			if string(c) == "late" {
				t.Fatal("a command whose caller gave up was proposed")
			}
		}
	}
}

func TestProposerReplicationErrorReachesEveryCaller(t *testing.T) {
	rep := &fakeReplicator{err: &slotstore.Error{Code: slotstore.CodeBusy, Message: "busy"}}
	p := New(Config{}, rep, nil)
	defer p.Close()
	for i := 0; i < 5; i++ {
		if _, err := p.Submit(ctxT(t), []byte("x")); slotstore.ErrorCode(err) != slotstore.CodeBusy {
			t.Fatalf("got %v, want busy", err)
		}
	}
}

func TestProposerCloseAnswersQueued(t *testing.T) {
	rep := &fakeReplicator{gate: make(chan struct{})}
	p := New(Config{MaxInFlight: 1}, rep, nil)
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			_, err := p.Submit(ctxT(t), []byte("x"))
			errs <- err
		}()
	}
	waitFor(t, func() bool {
		b := rep.batches()
		return len(b) == 1 && len(b[0])+p.QueueDepth() == 4
	})
	go func() { rep.gate <- struct{}{} }()
	p.Close()
	answered := 0
	for i := 0; i < 4; i++ {
		select {
		case <-errs:
			answered++
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 4 commands answered after Close", answered)
		}
	}
	if _, err := p.Submit(ctxT(t), []byte("y")); slotstore.ErrorCode(err) != slotstore.CodeBusy {
		t.Fatalf("submit after close: %v", err)
	}
}

func TestProposerConfigValidate(t *testing.T) {
	if err := (Config{MaxBatchBytes: meta.MaxEntryBytes + 1}).Validate(); err == nil {
		t.Fatal("oversize batch bound accepted")
	}
	if err := (Config{MaxWait: -1}).Validate(); err == nil {
		t.Fatal("negative wait accepted")
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond (a wait-for-condition, not a sleep-and-hope).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testutil.WaitUntil(t, 5*time.Second, time.Millisecond, "the condition", cond)
}

func TestProposerLoneCommandIsProposedByItsCaller(t *testing.T) {
	rep := &fakeReplicator{}
	p := New(Config{}, rep, nil)
	defer p.Close()
	for i := range 10 {
		want := fmt.Sprintf("lone-%d", i)
		if res, err := p.Submit(ctxT(t), []byte(want)); err != nil || res.Message != want {
			t.Fatalf("command %d: %q, %v", i, res.Message, err)
		}
	}
	if p.direct.Load() != 10 || len(rep.batches()) != 10 {
		t.Fatalf("10 commands one at a time: %d proposed directly, %d entries; want 10, 10", p.direct.Load(), len(rep.batches()))
	}
	// With every slot taken (by callers or the loop), commands wait in the
	// queue for the loop.
	gated := &fakeReplicator{gate: make(chan struct{})}
	q := New(Config{MaxInFlight: 2}, gated, nil)
	defer q.Close()
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := q.Submit(ctxT(t), []byte("x")); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, func() bool {
		b := gated.batches()
		n := q.QueueDepth()
		for _, e := range b {
			n += len(e)
		}
		return len(b) == 2 && n == 5
	})
	// Two entries in flight (the bound), the other commands queued: none
	// was proposed beside them.
	close(gated.gate)
	wg.Wait()
}

func TestProposerCloseWaitsForCallerProposing(t *testing.T) {
	rep := &fakeReplicator{gate: make(chan struct{})}
	p := New(Config{}, rep, nil)
	answer := make(chan error, 1)
	go func() {
		_, err := p.Submit(ctxT(t), []byte("direct"))
		answer <- err
	}()
	waitFor(t, func() bool { return len(rep.batches()) == 1 })
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a caller's entry was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(rep.gate)
	<-closed
	if err := <-answer; err != nil {
		t.Fatalf("the caller's entry: %v", err)
	}
	if _, err := p.Submit(ctxT(t), []byte("late")); slotstore.ErrorCode(err) != slotstore.CodeBusy {
		t.Fatalf("submit after close: %v", err)
	}
}
