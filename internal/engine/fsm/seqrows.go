package fsm

import (
	"bytes"
	"encoding/binary"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Numbered per-channel sequences (migration tasks, message events): rows
// at prefix | number(u64 BE) from 1, and the sequence's meta.SeqWindow at
// number 0.

// seqKey is the key of number n under prefix.
func seqKey(prefix []byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, len(prefix)+8), prefix...), n)
}

// readWindow reads the window record at prefix | 0 (zero if absent).
func (a *applier) readWindow(prefix []byte) meta.SeqWindow {
	w, _ := readRow(a, seqKey(prefix, 0), meta.DecodeSeqWindow)
	return w
}

// pushWindow assigns the next number of w and trims rows beyond keep from
// the oldest end, deleting them in this batch; it stores the new window
// and returns the assigned number.
func (a *applier) pushWindow(prefix []byte, w meta.SeqWindow, keep uint64) uint64 {
	w.Last++
	if w.Oldest == 0 {
		w.Oldest = 1
	}
	for w.Count() > keep {
		a.del(seqKey(prefix, w.Oldest))
		w.Oldest++
	}
	a.set(seqKey(prefix, 0), meta.EncodeSeqWindow(w))
	return w.Last
}

// seqPage reads the rows under prefix newest first — those numbered below
// before when it is not 0 — at most limit of them, decoded, through one
// iterator, so the window and the rows are one consistent view.
func seqPage[T any](s reader, prefix []byte, before uint64, limit int, decode func([]byte) (T, error)) (w meta.SeqWindow, items []T, more bool, err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		return w, nil, false, err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	zero := seqKey(prefix, 0)
	if it.SeekGE(zero) && bytes.Equal(it.Key(), zero) {
		if w, err = meta.DecodeSeqWindow(it.Value()); err != nil {
			return w, nil, false, err
		}
	}
	var ok bool
	if before == 0 {
		ok = it.Last()
	} else {
		ok = it.SeekLT(seqKey(prefix, before))
	}
	for ; ok; ok = it.Prev() {
		k := it.Key()
		if len(k) != len(prefix)+8 || binary.BigEndian.Uint64(k[len(prefix):]) == 0 {
			break
		}
		if len(items) == limit {
			more = true
			break
		}
		x, err := decode(it.Value())
		if err != nil {
			return w, nil, false, err
		}
		items = append(items, x)
	}
	return w, items, more, nil
}
