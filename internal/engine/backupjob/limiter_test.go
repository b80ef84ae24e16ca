package backupjob

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// TestReadLimit: image bytes pass at the node's rate, whoever reads them —
// 4 MiB at 1 MiB/s take 3.75 s of waiting after the first burst (256 KiB),
// two readers sharing the limit take as long for as many bytes together —
// and a reader whose context ends stops waiting. A fake clock: the waits
// are counted, not slept.
func TestReadLimit(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	var slept time.Duration
	l := newLimiter(1 << 20)
	l.now = func() time.Time { return clock }
	l.sleep = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		slept += d
		clock = clock.Add(d)
		return nil
	}
	var out bytes.Buffer
	w := l.writer(context.Background(), &out)
	if n, err := w.Write(make([]byte, 4<<20)); n != 4<<20 || err != nil {
		t.Fatalf("write: %d %v", n, err)
	}
	if want := 3750 * time.Millisecond; slept < want-time.Millisecond || slept > want+time.Millisecond {
		t.Fatalf("4 MiB at 1 MiB/s waited %v, want %v", slept, want)
	}
	// Two readers at once share it: 2 MiB each, 4 MiB in all, 4 s more
	// (the burst was spent).
	slept = 0
	a, b := l.writer(context.Background(), &out), l.writer(context.Background(), &out)
	for range 8 {
		if _, err := a.Write(make([]byte, 256<<10)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Write(make([]byte, 256<<10)); err != nil {
			t.Fatal(err)
		}
	}
	if want := 4 * time.Second; slept < want-time.Millisecond || slept > want+time.Millisecond {
		t.Fatalf("two readers of 2 MiB each waited %v, want %v", slept, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := l.writer(ctx, &out).Write(make([]byte, 1<<20)); !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("a reader whose context ended: %d %v", n, err)
	}
}
