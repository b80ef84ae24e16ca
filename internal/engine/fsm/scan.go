package fsm

import (
	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Prefix operations shared by the resource families: deleting and walking
// every row under a key prefix, through the Update's batch (apply) or the
// committed store (lookups).

// delPrefix deletes every key with prefix p in the batch with one range
// deletion. Pebble's indexed batch honours its own range deletions on reads
// (Get and iterators of the batch), so later commands of the same Update see
// the rows gone. It numbers nothing (clearRows does); in a tracked slot it
// lists every key it deletes in the slot's change log, so that a live move's
// target deletes them too.
func (a *applier) delPrefix(p []byte) {
	if _, tracked := a.trackedSlotOf(p); a.tracking && tracked {
		a.eachInBatch(p, func(k, _ []byte) bool { a.logChange(k); return true })
	}
	if err := a.b.DeleteRange(p, meta.PrefixEnd(p), nil); err != nil {
		a.fail(err)
	}
	a.last = lastRow{} // it may lie under p
}

// eachInBatch calls f with every key/value under prefix p, in key order, as
// the batch sees them (this Update's earlier writes included), until f
// returns false. Key and value are copies f may keep.
func (a *applier) eachInBatch(p []byte, f func(k, v []byte) bool) {
	it, err := a.b.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: meta.PrefixEnd(p)})
	if err != nil {
		a.fail(err)
		return
	}
	for it.First(); it.Valid(); it.Next() {
		if !f(append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...)) {
			break
		}
	}
	if err := it.Close(); err != nil {
		a.fail(err)
	}
}

// scanReader calls f with every key/value of r (the committed store or a
// snapshot of it) in [lower, end of prefix p), in key order, until f
// returns false or an error. lower must have p as a prefix; nil means p
// itself. The slices are valid only during the call.
func scanReader(r pebble.Reader, p, lower []byte, f func(k, v []byte) (bool, error)) error {
	if lower == nil {
		lower = p
	}
	return scanRange(r, lower, meta.PrefixEnd(p), f)
}

// scanRange is scanReader over [lower, upper).
func scanRange(r pebble.Reader, lower, upper []byte, f func(k, v []byte) (bool, error)) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		more, err := f(it.Key(), it.Value())
		if err != nil {
			_ = it.Close()
			return err
		}
		if !more {
			break
		}
	}
	return it.Close()
}

// scanLimit clamps a query's page size to (0, maxScanLimit].
func scanLimit(limit int) int {
	if limit <= 0 || limit > maxScanLimit {
		return maxScanLimit
	}
	return limit
}

// after returns the smallest key greater than k: k followed by 0x00.
func after(k []byte) []byte { return append(append([]byte(nil), k...), 0) }
