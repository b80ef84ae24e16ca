package console

import (
	"context"
	"errors"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// The change tail reads the newest records of some hash slots from the
// node's stored change log (watch.Log, the one GET /v1/watch reads) newest
// first, within bounds: a fragment that htmx re-fetches every 2 s must cost
// little however many slots it covers (a group may own all 256) and however
// busy they are. Each slot is read backwards from its head, a few records
// at a time; the slot whose next record is newest gives the next row (its
// own records by sequence, across slots by the leader's time: nothing
// orders them better across slots).

// Bounds of one tail.
const (
	// tailRows is how many rows a tail shows at most.
	tailRows = 50
	// tailScan is how many records a tail takes from its slots at most,
	// those it skips included (a channel's tail passes over the other
	// rows of its slot): beyond it the tail shows what it found.
	tailScan = 500
	// tailPage is the least a slot is read at a time after its first read.
	tailPage = 8
)

// tailResult is what a tail read: the records kept, newest first, and the
// slots whose change log is not on this node now.
type tailResult struct {
	recs        []watch.Record
	unavailable []slotstore.HashSlot
}

// backReader reads one slot's log backwards.
type backReader struct {
	slot  slotstore.HashSlot
	recs  []watch.Record // read and not taken yet, in sequence order
	below uint64         // the records up to this sequence are not read yet (0: none is left)
}

// readTail returns the newest records of slots that keep wants, at most
// rows of them, taking at most scan records. A slot no local replica owns
// is listed as unavailable; a slot whose older records retention dropped
// gives what it still keeps.
func readTail(ctx context.Context, log watch.Log, slots []slotstore.HashSlot, keep func(watch.Record) bool, rows, scan int) (tailResult, error) {
	var res tailResult
	var readers []*backReader
	for _, s := range slots {
		head, err := log.Head(ctx, s)
		switch {
		case errors.Is(err, watch.ErrUnavailable):
			res.unavailable = append(res.unavailable, s)
		case err != nil:
			return res, err
		case head > 0:
			readers = append(readers, &backReader{slot: s, below: head})
		}
	}
	if len(readers) == 0 {
		return res, nil
	}
	// Many slots: one record each first, then a few at a time from the
	// slots that give rows; one slot: a page of rows at a time.
	first := max(1, rows/len(readers))
	page := max(first, tailPage)
	live := readers[:0]
	for _, b := range readers {
		switch err := b.fill(ctx, log, first); {
		case errors.Is(err, watch.ErrUnavailable):
			res.unavailable = append(res.unavailable, b.slot)
		case err != nil:
			return res, err
		default:
			live = append(live, b)
		}
	}
	for scanned := 0; len(res.recs) < rows && scanned < scan; scanned++ {
		var next *backReader
		for _, b := range live {
			if len(b.recs) > 0 && (next == nil || newer(b.recs[len(b.recs)-1], next.recs[len(next.recs)-1])) {
				next = b
			}
		}
		if next == nil {
			break
		}
		r := next.recs[len(next.recs)-1]
		next.recs = next.recs[:len(next.recs)-1]
		if keep(r) {
			res.recs = append(res.recs, r)
		}
		if len(next.recs) == 0 {
			if err := next.fill(ctx, log, page); err != nil && !errors.Is(err, watch.ErrUnavailable) {
				return res, err
			} // a slot that left the node since its first read just ends
		}
	}
	return res, nil
}

// newer orders records across slots: by the leader's time, then by slot.
func newer(a, b watch.Record) bool {
	if a.TimeMs != b.TimeMs {
		return a.TimeMs > b.TimeMs
	}
	return a.Slot < b.Slot
}

// fill reads up to n of the slot's records below what it read before.
// When retention dropped the oldest of them it reads fewer, halving n
// until what is read is kept; with none kept the slot ends.
func (b *backReader) fill(ctx context.Context, log watch.Log, n int) error {
	for ; n > 0 && b.below > 0; n /= 2 {
		from := b.below - min(b.below, uint64(n))
		recs, err := log.Read(ctx, b.slot, from, int(b.below-from))
		if errors.Is(err, watch.ErrCompacted) {
			continue
		}
		if err != nil {
			return err
		}
		for len(recs) > 0 && recs[len(recs)-1].Seq > b.below {
			recs = recs[:len(recs)-1] // never past what the head said
		}
		b.recs, b.below = recs, from
		if len(recs) == 0 {
			b.below = 0
		}
		return nil
	}
	b.below = 0
	return nil
}
