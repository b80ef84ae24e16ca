package watch

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Record is one numbered change of a hash slot: a row put or deleted by a
// command, as its group applied it.
type Record struct {
	Slot slotstore.HashSlot
	Seq  uint64 // the slot's sequence: 1, 2, 3, … with no gap
	// Batch is the sequence of the first record of the command that made
	// the change: the records of one command share it (they are
	// consecutive, a command writes one slot) and are delivered together.
	Batch  uint64
	TimeMs int64 // the leader's time of the command
	Kind   Kind
	Table  meta.Table
	// Key is the row's primary key within its table; for a Clear, the
	// prefix of the rows cleared (a channel, for its subscriber list).
	Key   []byte
	Value []byte // the stored value after a put
	Prev  []byte // the stored value before a put or delete (nil: none)

	// skipTo, on a Sub's marker only, says that the slot's records Seq to
	// skipTo were published and its Filter wanted none of them: the
	// stream moves its position past them without a change to deliver
	// (and without reading them from the Log).
	skipTo uint64
}

// last is the sequence of the last record r stands for.
func (r *Record) last() uint64 { return max(r.Seq, r.skipTo) }

// Filter reports whether a watcher wants a record. The hub calls it on the
// publishing goroutine — a replica's apply — for every record of the slots
// a subscriber covers, so it must be quick and must not block. A
// subscriber is woken only for the records of an entry one of which it
// wants; for the others its position moves on quietly.
type Filter func(Record) bool

// Kind is what a record did to its row (meta.ChangeKind: the stored
// change log's own kinds).
type Kind = meta.ChangeKind

const (
	Put    = meta.ChangePut
	Delete = meta.ChangeDelete
	// Clear deleted every row of the table under Key at once (a deleted
	// channel's lists, a deleted user's devices): one record, however
	// many rows — a watcher reads it as a delete of each it holds.
	Clear = meta.ChangeClear
)

// group returns the leading run of recs that share recs[0]'s slot and
// batch: what is delivered at once.
func group(recs []Record) int {
	n := 1
	for n < len(recs) && recs[n].Slot == recs[0].Slot && recs[n].Batch == recs[0].Batch {
		n++
	}
	return n
}
