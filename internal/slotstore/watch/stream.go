package watch

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Log reads the records a node's store keeps of a hash slot.
type Log interface {
	// Read returns slot s's records after sequence after, in order and
	// without a gap, at most limit of them, up to the last one committed
	// (none when after is the head). ErrCompacted when the record after
	// after is no longer kept.
	Read(ctx context.Context, s slotstore.HashSlot, after uint64, limit int) ([]Record, error)
	// Head returns the sequence of slot s's last record committed here
	// (0: none yet).
	Head(ctx context.Context, s slotstore.HashSlot) (uint64, error)
}

var (
	// ErrCompacted is the answer for a position older than what is kept.
	ErrCompacted = errors.New("watch: position no longer retained")
	// ErrUnavailable is a Log's answer for a slot no replica on this node
	// serves now (the slot is between groups, or its group runs
	// elsewhere): the watcher resumes from its cursor, here later or on
	// another node.
	ErrUnavailable = errors.New("watch: hash slot not served on this node now")
)

// Awaiter is a Log that can first catch up with what its slots' groups
// have committed (a linearizable read round per group).
type Awaiter interface {
	Await(ctx context.Context, slots []slotstore.HashSlot) error
}

// ErrNotLinearizable answers a linearizable start on a Log that cannot
// catch up (it is not an Awaiter).
var ErrNotLinearizable = errors.New("watch: this log cannot start linearizably")

// NowLinearizable is Now after log caught up with every change committed
// before the call: a watch from it sees every write acknowledged after
// the call began, and none acknowledged before.
func NowLinearizable(ctx context.Context, log Log, slots ...slotstore.HashSlot) (Cursor, error) {
	a, ok := log.(Awaiter)
	if !ok {
		return Cursor{}, ErrNotLinearizable
	}
	if err := a.Await(ctx, slots); err != nil {
		return Cursor{}, err
	}
	return Now(ctx, log, slots...)
}

// Now returns a cursor at the heads of slots: a watch from it sees the
// changes committed here after this call. On a replica that lags its
// leader that may include writes acknowledged just before the call
// (NowLinearizable excludes them).
func Now(ctx context.Context, log Log, slots ...slotstore.HashSlot) (Cursor, error) {
	c := NewCursor(slots...)
	for _, s := range c.Slots() {
		h, err := log.Head(ctx, s)
		if err != nil {
			return Cursor{}, err
		}
		c.Set(s, h)
	}
	return c, nil
}

// pageLimit is how many records one Log read returns at most.
const pageLimit = 512

// Stream is one watcher: it delivers the records of the slots its cursor
// covers, after the cursor's positions, each exactly once and in sequence
// order per slot, the records of one Raft entry of one slot together.
type Stream struct {
	sub    *Sub
	log    Log
	cur    Cursor
	limit  int                           // queue bound (the hub's Buffer)
	behind [slotstore.HashSlotCount]bool // read from the Log before anything pushed
	queue  []Record                      // pushed, not yet delivered
	page   []Record                      // read from the Log, not yet delivered
}

// Open subscribes to h and returns a stream from the positions of from.
// want (nil: everything) is the watch's filter: the hub wakes the stream
// only for entries with a record it wants, and moves its position past the
// others (see Filter); what it delivers may still hold records the filter
// does not want (the rest of a wanted entry, records read from the Log),
// for the caller to drop.
// Every covered slot is first read from the Log: the store may hold
// records past the position.
func Open(h *Hub, log Log, from Cursor, want Filter) (*Stream, error) {
	return OpenRinging(h, log, from, want, nil)
}

// OpenRinging is Open for a reader of many streams: the stream rings bell
// (nil: a channel of its own, Ready) when it has something to deliver.
func OpenRinging(h *Hub, log Log, from Cursor, want Filter, bell *Bell) (*Stream, error) {
	st := &Stream{log: log, cur: from, limit: h.cfg.Buffer}
	sub, err := h.subscribe(from.Slots(), want, bell, st)
	if err != nil {
		return nil, err
	}
	st.sub = sub
	for _, s := range from.Slots() {
		st.behind[s] = true
	}
	return st, nil
}

// Cursor is the position after the last records Poll returned.
func (st *Stream) Cursor() Cursor { return st.cur }

// Ready is signalled when records were published for the stream.
func (st *Stream) Ready() <-chan struct{} { return st.sub.Ready() }

// Close ends the stream; safe from any goroutine.
func (st *Stream) Close() { st.sub.Close() }

// Poll returns the next records to deliver — one slot's records of one Raft
// entry — and moves the cursor past them, or nil when there is nothing to
// deliver now (wait on Ready). It reads the Log, within ctx, while a slot is
// behind. ErrSlowConsumer, ErrClosed and ErrCompacted end the stream; the
// cursor is still the position to resume from.
func (st *Stream) Poll(ctx context.Context) ([]Record, error) {
	if err := st.drain(); err != nil {
		return nil, err
	}
	for {
		if recs := st.fromPage(); recs != nil {
			return recs, nil
		}
		if recs := st.fromQueue(); recs != nil {
			return recs, nil
		}
		s, ok := st.nextBehind()
		if !ok {
			return nil, nil
		}
		if err := st.read(ctx, s); err != nil {
			return nil, err
		}
	}
}

// CaughtUp reports whether the stream has delivered everything this node
// has of its slots as far as it knows: nothing behind, nothing queued. A
// progress mark is sent only then.
func (st *Stream) CaughtUp() bool {
	_, behind := st.nextBehind()
	return !behind && len(st.queue) == 0 && len(st.page) == 0
}

// drain moves what the hub pushed into the queue. Records of a slot being
// read from the Log are dropped (the Log has them); a queue that would pass
// its bound sends the slots of what overflows back to the Log.
func (st *Stream) drain() error {
	recs, err := st.sub.Take()
	if err != nil {
		return err
	}
	for _, r := range recs {
		switch {
		case st.behind[r.Slot]:
		case len(st.queue) >= st.limit:
			st.behind[r.Slot] = true
		default:
			st.queue = append(st.queue, r)
		}
	}
	return nil
}

// fromQueue delivers the queue's next group: repeats are dropped, a gap
// sends the slot to the Log.
func (st *Stream) fromQueue() []Record {
	for len(st.queue) > 0 {
		r := st.queue[0]
		pos := st.cur.Seq(r.Slot)
		switch {
		case st.behind[r.Slot] || r.last() <= pos:
			st.queue = st.queue[1:]
		case r.Seq > pos+1:
			st.behind[r.Slot] = true
			st.queue = st.queue[1:]
		case r.skipTo != 0: // records not wanted: past them, nothing to deliver
			st.cur.Set(r.Slot, r.skipTo)
			st.queue = st.queue[1:]
		default:
			n := 1
			for n < len(st.queue) && st.queue[n].Slot == r.Slot && st.queue[n].Batch == r.Batch && st.queue[n].Seq == st.queue[n-1].Seq+1 {
				n++
			}
			out := st.queue[:n:n]
			st.queue = st.queue[n:]
			st.cur.Set(r.Slot, out[n-1].Seq)
			return out
		}
	}
	st.queue = nil
	return nil
}

// fromPage delivers the next group of the last Log read.
func (st *Stream) fromPage() []Record {
	if len(st.page) == 0 {
		return nil
	}
	n := group(st.page)
	out := st.page[:n:n]
	st.page = st.page[n:]
	st.cur.Set(out[0].Slot, out[n-1].Seq)
	return out
}

func (st *Stream) nextBehind() (slotstore.HashSlot, bool) {
	for s, b := range st.behind {
		if b {
			return slotstore.HashSlot(s), true
		}
	}
	return 0, false
}

// read reads slot s's next page from the Log; an empty one means s is
// caught up. A full page's last group may continue past it: it is left for
// the next read, unless it is the whole page (a group larger than a page is
// delivered in parts).
func (st *Stream) read(ctx context.Context, s slotstore.HashSlot) error {
	pos := st.cur.Seq(s)
	recs, err := st.log.Read(ctx, s, pos, pageLimit)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		st.behind[s] = false
		return nil
	}
	for i, r := range recs {
		if r.Slot != s || r.Seq != pos+1+uint64(i) {
			return fmt.Errorf("watch: the log of %v answered seq %d of %v after %d", s, r.Seq, r.Slot, pos+uint64(i))
		}
	}
	if len(recs) == pageLimit {
		last := len(recs) - 1
		for last > 0 && recs[last-1].Batch == recs[len(recs)-1].Batch {
			last--
		}
		if last > 0 {
			recs = recs[:last]
		}
	}
	st.page = recs
	return nil
}
