package operatortest

import (
	"context"
	"sync"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// ChangeLog is an in-memory watch.Log beside the fake: the change log a
// node keeps of its hash slots, for the console's change tails. Tests
// append records (numbered per slot as a group numbers them), trim the
// oldest as retention does (ErrCompacted below them), and move slots off
// the node (ErrUnavailable). It counts the records it handed out, so a
// test can hold a reader to its bounds. Safe for concurrent use.
type ChangeLog struct {
	mu    sync.Mutex
	slots map[slotstore.HashSlot]*slotLog
	away  map[slotstore.HashSlot]bool
	given int
}

// slotLog is one slot's kept records: sequences first … first+len-1.
type slotLog struct {
	first uint64
	recs  []watch.Record
}

var _ watch.Log = (*ChangeLog)(nil)

// NewChangeLog returns an empty change log: every slot local, none changed.
func NewChangeLog() *ChangeLog {
	return &ChangeLog{slots: map[slotstore.HashSlot]*slotLog{}, away: map[slotstore.HashSlot]bool{}}
}

// Append adds r to its slot's log as the slot's next change (Seq and, when
// zero, Batch are set) and returns it as stored.
func (l *ChangeLog) Append(r watch.Record) watch.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl := l.slots[r.Slot]
	if sl == nil {
		sl = &slotLog{first: 1}
		l.slots[r.Slot] = sl
	}
	r.Seq = sl.first + uint64(len(sl.recs))
	if r.Batch == 0 {
		r.Batch = r.Seq
	}
	sl.recs = append(sl.recs, r)
	return r
}

// Trim drops slot s's records up to sequence through (the head stays).
func (l *ChangeLog) Trim(s slotstore.HashSlot, through uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl := l.slots[s]
	if sl == nil || through < sl.first {
		return
	}
	n := min(int(through-sl.first+1), len(sl.recs))
	sl.recs, sl.first = sl.recs[n:], sl.first+uint64(n)
}

// SetAway moves slot s off this node (away) or back.
func (l *ChangeLog) SetAway(s slotstore.HashSlot, away bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.away[s] = away
}

// Given is how many records reads have returned so far.
func (l *ChangeLog) Given() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.given
}

func (l *ChangeLog) Head(_ context.Context, s slotstore.HashSlot) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.away[s] {
		return 0, watch.ErrUnavailable
	}
	if sl := l.slots[s]; sl != nil {
		return sl.first + uint64(len(sl.recs)) - 1, nil
	}
	return 0, nil
}

func (l *ChangeLog) Read(_ context.Context, s slotstore.HashSlot, after uint64, limit int) ([]watch.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.away[s] {
		return nil, watch.ErrUnavailable
	}
	sl := l.slots[s]
	if sl == nil || after >= sl.first+uint64(len(sl.recs))-1 {
		return nil, nil
	}
	if after+1 < sl.first {
		return nil, watch.ErrCompacted
	}
	from := int(after + 1 - sl.first)
	out := append([]watch.Record(nil), sl.recs[from:min(len(sl.recs), from+limit)]...)
	l.given += len(out)
	return out, nil
}
