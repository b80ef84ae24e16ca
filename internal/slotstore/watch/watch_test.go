package watch

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// memLog is a store's change log in memory: records are committed here
// before they are published, as a replica's batch is.
type memLog struct {
	mu    sync.Mutex
	slots map[slotstore.HashSlot][]Record // kept records, in order
	index uint64
	reads int // Read calls that returned records
}

func newMemLog() *memLog { return &memLog{slots: map[slotstore.HashSlot][]Record{}} }

// commit numbers n changes of slot s as one entry, keeps them, and returns them.
func (l *memLog) commit(s slotstore.HashSlot, n int) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index++
	kept := l.slots[s]
	next := uint64(1)
	if len(kept) > 0 {
		next = kept[len(kept)-1].Seq + 1
	}
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{Slot: s, Seq: next + uint64(i), Batch: next, Key: []byte{byte(i)}}
	}
	l.slots[s] = append(kept, out...)
	return out
}

// trim keeps only the records of s after seq.
func (l *memLog) trim(s slotstore.HashSlot, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.slots[s]
	for len(kept) > 0 && kept[0].Seq <= seq {
		kept = kept[1:]
	}
	l.slots[s] = kept
}

func (l *memLog) Read(_ context.Context, s slotstore.HashSlot, after uint64, limit int) ([]Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.slots[s]
	if len(kept) == 0 || kept[len(kept)-1].Seq <= after {
		return nil, nil
	}
	if kept[0].Seq > after+1 {
		return nil, ErrCompacted
	}
	i := int(after + 1 - kept[0].Seq)
	l.reads++
	return append([]Record(nil), kept[i:min(len(kept), i+limit)]...), nil
}

func (l *memLog) Head(_ context.Context, s slotstore.HashSlot) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if kept := l.slots[s]; len(kept) > 0 {
		return kept[len(kept)-1].Seq, nil
	}
	return 0, nil
}

// collect polls st until it has nothing to deliver and appends what it got.
func collect(t *testing.T, st *Stream, got map[slotstore.HashSlot][]Record) {
	t.Helper()
	for {
		recs, err := st.Poll(context.Background())
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if recs == nil {
			return
		}
		checkGroup(t, recs)
		got[recs[0].Slot] = append(got[recs[0].Slot], recs...)
	}
}

func checkGroup(t *testing.T, recs []Record) {
	t.Helper()
	for _, r := range recs[1:] {
		if r.Slot != recs[0].Slot || r.Batch != recs[0].Batch {
			t.Fatalf("one delivery mixes entries: %+v", recs)
		}
	}
}

// checkExactlyOnce: got[s] is every record of s after from's position, once, in order.
func checkExactlyOnce(t *testing.T, l *memLog, from Cursor, got map[slotstore.HashSlot][]Record) {
	t.Helper()
	for _, s := range from.Slots() {
		kept := l.slots[s]
		var want []Record
		for _, r := range kept {
			if r.Seq > from.Seq(s) {
				want = append(want, r)
			}
		}
		if len(got[s]) != len(want) {
			t.Fatalf("slot %v: got %d records, want %d", s, len(got[s]), len(want))
		}
		for i := range want {
			if got[s][i].Seq != want[i].Seq || got[s][i].Batch != want[i].Batch {
				t.Fatalf("slot %v record %d: got seq %d (entry %d), want %d (entry %d)", s, i, got[s][i].Seq, got[s][i].Batch, want[i].Seq, want[i].Batch)
			}
		}
	}
}

// TestStreamDeliversEveryRecordOnce races a writer that commits and
// publishes against a watcher that subscribes in the middle of it and reads
// at its own pace: whatever the interleaving, each slot's records after the
// cursor arrive once, in order, each entry's together.
func TestStreamDeliversEveryRecordOnce(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := newMemLog()
		h, err := NewHub(Config{Buffer: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		slots := []slotstore.HashSlot{3, 9, 200}
		commitSome := func(n int) {
			for i := 0; i < n; i++ {
				h.Publish(l.commit(slots[rng.IntN(len(slots))], 1+rng.IntN(3)))
			}
		}
		commitSome(rng.IntN(700)) // some before the watcher: read from the log
		from := NewCursor(slots...)
		from.Set(9, uint64(rng.IntN(3)))
		st, err := Open(h, l, from, nil)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		wrng := rand.New(rand.NewPCG(seed, 8))
		go func() {
			defer close(done)
			for i := 0; i < 400; i++ {
				h.Publish(l.commit(slots[wrng.IntN(len(slots))], 1+wrng.IntN(3)))
				if wrng.IntN(50) == 0 {
					runtime.Gosched() // let the reader in between
				}
			}
		}()
		got := map[slotstore.HashSlot][]Record{}
		for i := 0; i < 50; i++ {
			collect(t, st, got)
		}
		<-done
		collect(t, st, got)
		if !st.CaughtUp() {
			t.Fatalf("seed %d: not caught up after the writer stopped", seed)
		}
		checkExactlyOnce(t, l, from, got)
		st.Close()
		if h.Subscribers() != 0 {
			t.Fatalf("a closed stream stays subscribed")
		}
	}
}

// TestStreamFillsAGapFromTheLog: records committed but published to no one
// (the slot came from another node, or the stream subscribed while they
// were being committed) are read from the log when a later one shows the gap.
func TestStreamFillsAGapFromTheLog(t *testing.T) {
	l := newMemLog()
	h, _ := NewHub(Config{})
	st, err := Open(h, l, NewCursor(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[slotstore.HashSlot][]Record{}
	collect(t, st, got)
	l.commit(5, 2) // never published
	h.Publish(l.commit(5, 1))
	collect(t, st, got)
	if seqs := len(got[5]); seqs != 3 || got[5][0].Seq != 1 || got[5][2].Seq != 3 {
		t.Fatalf("got %+v, want seqs 1..3", got[5])
	}
	if cur := st.Cursor(); cur.Seq(5) != 3 {
		t.Fatalf("cursor at %d, want 3", cur.Seq(5))
	}
}

// TestSlowConsumerIsCutWithItsPosition: a watcher that does not read while
// more than Buffer records are published for it is cut; its cursor is where
// it stopped, and a new stream from there gets the rest.
func TestSlowConsumerIsCutWithItsPosition(t *testing.T) {
	l := newMemLog()
	h, _ := NewHub(Config{Buffer: 8})
	st, err := Open(h, l, NewCursor(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Publish(l.commit(1, 2))
	got := map[slotstore.HashSlot][]Record{}
	collect(t, st, got)
	for i := 0; i < 5; i++ {
		h.Publish(l.commit(1, 2)) // 10 records unread: past the bound
	}
	if _, err := st.Poll(context.Background()); !errors.Is(err, ErrSlowConsumer) {
		t.Fatalf("poll after overflow: %v, want ErrSlowConsumer", err)
	}
	from := st.Cursor()
	st.Close()
	if from.Seq(1) != 2 {
		t.Fatalf("cut at %d, want 2 (what was delivered)", from.Seq(1))
	}
	again, err := Open(h, l, from, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	rest := map[slotstore.HashSlot][]Record{}
	collect(t, again, rest)
	checkExactlyOnce(t, l, from, rest)
}

// TestCompactedPosition: a cursor behind what the log keeps ends the stream
// with ErrCompacted (the API's 410), not with a silent jump.
func TestCompactedPosition(t *testing.T) {
	l := newMemLog()
	h, _ := NewHub(Config{})
	l.commit(4, 5)
	l.trim(4, 3)
	st, err := Open(h, l, NewCursor(4), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Poll(context.Background()); !errors.Is(err, ErrCompacted) {
		t.Fatalf("poll: %v, want ErrCompacted", err)
	}
	from := NewCursor(4)
	from.Set(4, 3)
	ok, _ := Open(h, l, from, nil)
	defer ok.Close()
	got := map[slotstore.HashSlot][]Record{}
	collect(t, ok, got)
	checkExactlyOnce(t, l, from, got)
}

// TestLargeLogIsPagedWithoutSplittingEntries: a backlog longer than a page
// arrives whole, each entry in one delivery, also where a page ends inside one.
func TestLargeLogIsPagedWithoutSplittingEntries(t *testing.T) {
	l := newMemLog()
	h, _ := NewHub(Config{})
	for l.index < 3*pageLimit/2 { // 512 is not a multiple of 3
		l.commit(7, 3)
	}
	st, _ := Open(h, l, NewCursor(7), nil)
	defer st.Close()
	got := map[slotstore.HashSlot][]Record{}
	for {
		recs, err := st.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if recs == nil {
			break
		}
		if len(recs) != 3 || recs[0].Batch != recs[2].Batch {
			t.Fatalf("a delivery of %d records from entries %d..%d, want one whole entry of 3", len(recs), recs[0].Batch, recs[len(recs)-1].Batch)
		}
		got[7] = append(got[7], recs...)
	}
	checkExactlyOnce(t, l, NewCursor(7), got)
}

// TestStreamDropsRepeats: a record read from the log before its batch was
// published (commit, then publish, with the reader in between) is not
// delivered again when the publish arrives.
func TestStreamDropsRepeats(t *testing.T) {
	l := newMemLog()
	h, _ := NewHub(Config{})
	st, _ := Open(h, l, NewCursor(2), nil)
	defer st.Close()
	got := map[slotstore.HashSlot][]Record{}
	recs := l.commit(2, 2)
	collect(t, st, got) // read from the log
	h.Publish(recs)     // the same batch, published late
	h.Publish(l.commit(2, 1))
	collect(t, st, got)
	checkExactlyOnce(t, l, NewCursor(2), got)
}

func TestHubBoundsSubscribers(t *testing.T) {
	h, _ := NewHub(Config{MaxSubscribers: 2})
	a, _ := h.Subscribe([]slotstore.HashSlot{1}, nil)
	if _, err := h.Subscribe([]slotstore.HashSlot{1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Subscribe(nil, nil); !errors.Is(err, ErrTooManyWatchers) {
		t.Fatalf("third subscriber: %v, want ErrTooManyWatchers", err)
	}
	a.Close()
	a.Close() // twice is fine
	if _, err := h.Subscribe(nil, nil); err != nil {
		t.Fatalf("after a close: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{{MaxSubscribers: -1}, {Buffer: 1 << 21}} {
		if err := c.Validate(); err == nil {
			t.Fatalf("%+v: no error", c)
		}
	}
}

// TestHubClose: closing the hub ends every subscriber (each reads
// ErrClosed, its Ready fires) and refuses new ones.
func TestHubClose(t *testing.T) {
	h, err := NewHub(Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := h.Subscribe([]slotstore.HashSlot{1}, nil)
	b, _ := h.Subscribe(nil, nil)
	h.Close()
	for _, s := range []*Sub{a, b} {
		select {
		case <-s.Ready():
		default:
			t.Fatal("a subscriber was not woken by the close")
		}
		if _, err := s.Take(); !errors.Is(err, ErrClosed) {
			t.Fatalf("take after close: %v", err)
		}
		s.Close()
	}
	if _, err := h.Subscribe([]slotstore.HashSlot{1}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("subscribe after close: %v", err)
	}
	if n := h.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers left", n)
	}
}

// awaitingLog is a memLog whose Await commits what "the leader" had
// committed before the call: a log that lags until it is asked to catch up.
type awaitingLog struct {
	*memLog
	pending func()
	asked   []slotstore.HashSlot
}

func (l *awaitingLog) Await(_ context.Context, slots []slotstore.HashSlot) error {
	l.asked = append(l.asked, slots...)
	if l.pending != nil {
		l.pending()
		l.pending = nil
	}
	return nil
}

// TestNowLinearizable: a linearizable start catches the log up first, so
// its cursor is past a change committed before the call that the lagging
// log had not applied; Now's is not; a log that cannot catch up refuses.
func TestNowLinearizable(t *testing.T) {
	l := &awaitingLog{memLog: newMemLog()}
	l.commit(3, 2)
	l.pending = func() { l.commit(3, 1) } // committed at the leader, not applied here yet
	lazy, err := Now(context.Background(), l, 3)
	if err != nil || lazy.Seq(3) != 2 {
		t.Fatalf("Now: %v at %d", err, lazy.Seq(3))
	}
	c, err := NowLinearizable(context.Background(), l, 3)
	if err != nil || c.Seq(3) != 3 {
		t.Fatalf("NowLinearizable: %v at %d, want 3", err, c.Seq(3))
	}
	if len(l.asked) != 1 || l.asked[0] != 3 {
		t.Fatalf("Await asked for %v", l.asked)
	}
	if _, err := NowLinearizable(context.Background(), newMemLog(), 3); !errors.Is(err, ErrNotLinearizable) {
		t.Fatalf("a log that cannot catch up: %v", err)
	}
}

// TestFilteredStreamDeliversWhatItWantsOnce: with a filter, whatever the
// interleaving, every wanted record after the cursor arrives once, in
// order, with the rest of its entry; entries it does not want may be
// skipped; the cursor ends at every slot's head.
func TestFilteredStreamDeliversWhatItWantsOnce(t *testing.T) {
	want := func(r Record) bool { return r.Seq%5 == 0 }
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		l := newMemLog()
		h, err := NewHub(Config{Buffer: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		slots := []slotstore.HashSlot{3, 9, 200}
		commit := func(r *rand.Rand) { h.Publish(l.commit(slots[r.IntN(len(slots))], 1+r.IntN(3))) }
		for range rng.IntN(300) {
			commit(rng)
		}
		from := NewCursor(slots...)
		from.Set(9, uint64(rng.IntN(3)))
		st, err := Open(h, l, from, want)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		wrng := rand.New(rand.NewPCG(seed, 10))
		go func() {
			defer close(done)
			for i := 0; i < 400; i++ {
				commit(wrng)
				if wrng.IntN(50) == 0 {
					runtime.Gosched() // let the reader in between
				}
			}
		}()
		got := map[slotstore.HashSlot][]Record{}
		for i := 0; i < 50; i++ {
			collect(t, st, got)
		}
		<-done
		collect(t, st, got)
		for _, s := range slots {
			var wanted, seen []uint64
			for _, r := range l.slots[s] {
				if r.Seq > from.Seq(s) && want(r) {
					wanted = append(wanted, r.Seq)
				}
			}
			last := from.Seq(s)
			for _, r := range got[s] {
				if r.Seq <= last {
					t.Fatalf("seed %d slot %v: seq %d after %d (repeated or out of order)", seed, s, r.Seq, last)
				}
				last = r.Seq
				if want(r) {
					seen = append(seen, r.Seq)
				}
			}
			if !slices.Equal(seen, wanted) {
				t.Fatalf("seed %d slot %v: wanted records delivered %v, want %v", seed, s, seen, wanted)
			}
			if head, _ := l.Head(context.Background(), s); st.cur.Seq(s) != head {
				t.Fatalf("seed %d slot %v: cursor at %d, head %d", seed, s, st.cur.Seq(s), head)
			}
		}
		st.Close()
	}
}

// TestFilteredStreamSleepsThroughWhatItDoesNotWant: a caught-up stream is
// not woken, and reads nothing from the log, for entries its filter does
// not want, however many; its position still moves past them, and a
// wanted one is delivered at once.
func TestFilteredStreamSleepsThroughWhatItDoesNotWant(t *testing.T) {
	l := newMemLog()
	h, err := NewHub(Config{Buffer: 16})
	if err != nil {
		t.Fatal(err)
	}
	wantKey := func(r Record) bool { return r.Key[0] == 2 } // the third change of an entry
	st, err := Open(h, l, NewCursor(4), wantKey)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := st.Poll(context.Background()); recs != nil || err != nil {
		t.Fatalf("first poll: %v, %v", recs, err)
	}
	reads := l.reads
	for range 100 { // 100 entries of two changes: none wanted
		h.Publish(l.commit(4, 2))
	}
	select {
	case <-st.Ready():
		t.Fatal("woken for records it does not want")
	default:
	}
	if recs, err := st.Poll(context.Background()); recs != nil || err != nil {
		t.Fatalf("poll: %v, %v", recs, err)
	}
	if st.cur.Seq(4) != 200 || l.reads != reads {
		t.Fatalf("position %d (want 200), %d log reads", st.cur.Seq(4), l.reads-reads)
	}
	h.Publish(l.commit(4, 3))
	<-st.Ready()
	recs, err := st.Poll(context.Background())
	if err != nil || len(recs) != 3 || recs[0].Seq != 201 || l.reads != reads {
		t.Fatalf("the wanted entry: %+v, %v (%d log reads)", recs, err, l.reads-reads)
	}
}
