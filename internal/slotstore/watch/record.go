package watch

import (
	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

// Record is one numbered change of a hash slot: a row put or deleted by a
// command, as its group applied it.
type Record struct {
	Slot slotstore.HashSlot
	Seq  uint64 // the slot's sequence: 1, 2, 3, … with no gap
	// Index is the Raft index of the entry whose command made the change:
	// the records of one entry in one slot are delivered together.
	Index  uint64
	TimeMs int64 // the leader's time of the command
	Delete bool
	Table  meta.Table
	Key    []byte // the row's primary key within its table
	Value  []byte // the stored value after a put
	Prev   []byte // the stored value before (nil: none)
}

// group returns the leading run of recs that share recs[0]'s slot and
// Raft index: what is delivered at once.
func group(recs []Record) int {
	n := 1
	for n < len(recs) && recs[n].Slot == recs[0].Slot && recs[n].Index == recs[0].Index {
		n++
	}
	return n
}
