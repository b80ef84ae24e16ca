package watch

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestBellNamesTheStreamsThatRang: three streams share a bell; changes
// for two of them ring it, and Rung names those two once each, however
// often they rang, and only them; each delivers its own slot's records.
// A stream closed by another goroutine rings too, and its Poll says so.
func TestBellNamesTheStreamsThatRang(t *testing.T) {
	h, err := NewHub(Config{})
	if err != nil {
		t.Fatal(err)
	}
	l := newMemLog()
	bell := NewBell()
	var sts []*Stream
	for s := range slotstore.HashSlot(3) {
		st, err := OpenRinging(h, l, NewCursor(s), nil, bell)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		sts = append(sts, st)
		// Nothing committed yet: the first poll reads each slot's (empty) log.
		if recs, err := st.Poll(context.Background()); err != nil || recs != nil {
			t.Fatalf("first poll of slot %v: %v %v", s, recs, err)
		}
	}
	if got := bell.Rung(); got != nil {
		t.Fatalf("rung before any change: %d streams", len(got))
	}
	for range 3 {
		h.Publish(l.commit(2, 2))
		h.Publish(l.commit(0, 1))
	}
	select {
	case <-bell.Ready():
	default:
		t.Fatal("the bell did not ring")
	}
	rung := bell.Rung()
	if !slices.Equal(rung, []*Stream{sts[2], sts[0]}) {
		t.Fatalf("rung %v, want the streams of slots 2 and 0, in that order", rung)
	}
	if again := bell.Rung(); again != nil {
		t.Fatalf("rung again without a change: %d streams", len(again))
	}
	for i, want := range map[int]int{0: 3, 2: 6} {
		got := map[slotstore.HashSlot][]Record{}
		collect(t, sts[i], got)
		if n := len(got[slotstore.HashSlot(i)]); n != want {
			t.Fatalf("slot %d delivered %d records, want %d", i, n, want)
		}
	}
	sts[1].Close()
	if rung := bell.Rung(); !slices.Equal(rung, []*Stream{sts[1]}) {
		t.Fatalf("after a close rung %v, want the closed stream", rung)
	}
	if _, err := sts[1].Poll(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("poll of the closed stream: %v", err)
	}
}
