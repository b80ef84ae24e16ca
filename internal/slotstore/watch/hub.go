package watch

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Config bounds a node's watchers.
type Config struct {
	// MaxSubscribers bounds the subscribers of one Hub (one node): the one
	// over it is refused with ErrTooManyWatchers. Default 10 000.
	MaxSubscribers int
	// Buffer bounds the records queued for one subscriber and not yet
	// read: the subscriber whose queue would grow past it is cut
	// (ErrSlowConsumer). Default 4 096.
	Buffer int
}

func (c Config) withDefaults() Config {
	if c.MaxSubscribers == 0 {
		c.MaxSubscribers = 10_000
	}
	if c.Buffer == 0 {
		c.Buffer = 4096
	}
	return c
}

// Validate reports a bound out of its range.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.MaxSubscribers < 1 || c.MaxSubscribers > 1_000_000 {
		return fmt.Errorf("watch: MaxSubscribers %d out of range [1, 1000000]", c.MaxSubscribers)
	}
	if c.Buffer < 1 || c.Buffer > 1<<20 {
		return fmt.Errorf("watch: Buffer %d out of range [1, 1048576]", c.Buffer)
	}
	return nil
}

var (
	// ErrTooManyWatchers refuses a subscriber over Config.MaxSubscribers.
	ErrTooManyWatchers = errors.New("watch: too many watchers on this node")
	// ErrSlowConsumer cuts a subscriber that fell Config.Buffer records
	// behind what was published for it.
	ErrSlowConsumer = errors.New("watch: the watcher fell too far behind")
	// ErrClosed is what a closed subscriber reads.
	ErrClosed = errors.New("watch: closed")
)

// Publisher takes the records of each committed batch of a node's
// replicas: the one way changes go from the state machines that number
// them to the watchers (fsm.Config.Changes, replicas.Config.Changes; the
// node's Hub). Publish must not block; it may keep the records.
type Publisher interface {
	Publish(recs []Record)
}

// Hub hands the records a node's replicas publish to the subscribers of
// their hash slots.
type Hub struct {
	cfg    Config
	mu     sync.RWMutex
	bySlot [slotstore.HashSlotCount]map[*Sub]struct{}
	all    map[*Sub]struct{}
	closed bool
}

// Source is what a node serves watches from: its hub, its change log, and
// for the route stream a channel closed at the next change of the node's
// routing snapshot (table or leaders; routing.Router.Changed).
type Source struct {
	Hub           *Hub
	Log           Log
	RoutesChanged func() <-chan struct{}
}

// NewHub returns a hub with cfg's bounds (zero values take the defaults).
func NewHub(cfg Config) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Hub{cfg: cfg.withDefaults(), all: map[*Sub]struct{}{}}, nil
}

// Subscribe registers a subscriber for the records of slots published from
// now on; want (nil: every record) keeps it asleep for what it does not
// want.
func (h *Hub) Subscribe(slots []slotstore.HashSlot, want Filter) (*Sub, error) {
	return h.subscribe(slots, want, nil, nil)
}

// subscribe is Subscribe; with a bell, the subscriber rings it for owner
// instead of signalling its own channel.
func (h *Hub) subscribe(slots []slotstore.HashSlot, want Filter, bell *Bell, owner *Stream) (*Sub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if len(h.all) >= h.cfg.MaxSubscribers {
		return nil, ErrTooManyWatchers
	}
	s := &Sub{hub: h, slots: slots, want: want, limit: h.cfg.Buffer, bell: bell, owner: owner}
	if bell == nil {
		s.ready = make(chan struct{}, 1)
	}
	for _, slot := range slots {
		if !slot.Valid() {
			continue
		}
		if h.bySlot[slot] == nil {
			h.bySlot[slot] = make(map[*Sub]struct{})
		}
		h.bySlot[slot][s] = struct{}{}
	}
	h.all[s] = struct{}{}
	return s, nil
}

// Subscribers is how many subscribers the hub holds.
func (h *Hub) Subscribers() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.all)
}

// Close ends every subscriber (they read ErrClosed) and refuses new ones:
// the node is stopping.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	subs := make([]*Sub, 0, len(h.all))
	for s := range h.all {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.end(ErrClosed)
	}
}

// Publish hands recs — the records of one committed batch, in sequence
// order within each slot — to the subscribers of their slots. It never
// blocks on a subscriber: one whose queue is full is cut. A batch holds
// whole commands, so a subscriber's Filter decides for each slot's run of
// records at once: all of it, or a marker that skips it.
func (h *Hub) Publish(recs []Record) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for i := 0; i < len(recs); {
		n := 1
		for i+n < len(recs) && recs[i+n].Slot == recs[i].Slot {
			n++
		}
		if slot := recs[i].Slot; slot.Valid() {
			for s := range h.bySlot[slot] {
				s.push(recs[i : i+n])
			}
		}
		i += n
	}
}

func (h *Hub) remove(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, slot := range s.slots {
		if slot.Valid() {
			delete(h.bySlot[slot], s)
		}
	}
	delete(h.all, s)
}

// Sub is one subscriber's queue of published records.
type Sub struct {
	hub   *Hub
	slots []slotstore.HashSlot
	want  Filter // nil: everything
	limit int
	ready chan struct{} // a signal: records or an end are waiting (nil with a bell)
	bell  *Bell         // rung for owner instead, when the reader reads many
	owner *Stream
	rung  bool // on bell's list now (guarded by bell.mu)

	mu      sync.Mutex
	pending []Record
	err     error // ErrSlowConsumer or ErrClosed: the end
	once    sync.Once
}

func (s *Sub) push(recs []Record) {
	if s.want != nil && !slices.ContainsFunc(recs, s.want) {
		s.skip(recs[0].Slot, recs[0].Seq, recs[len(recs)-1].Seq)
		return
	}
	s.mu.Lock()
	switch {
	case s.err != nil:
	case len(s.pending)+len(recs) > s.limit:
		s.err, s.pending = ErrSlowConsumer, nil
	default:
		s.pending = append(s.pending, recs...)
	}
	s.mu.Unlock()
	s.signal()
}

// skip queues a marker that slot's records from to to were not wanted,
// extending the last one when it ends just before. It wakes the reader
// only when its queue is half full of them (an idle watcher of a busy
// slot is not a slow consumer), or to tell it that it was cut.
func (s *Sub) skip(slot slotstore.HashSlot, from, to uint64) {
	s.mu.Lock()
	wake := false
	switch n := len(s.pending); {
	case s.err != nil:
	case n > 0 && s.pending[n-1].skipTo != 0 && s.pending[n-1].Slot == slot && s.pending[n-1].skipTo+1 == from:
		s.pending[n-1].skipTo = to
	case n+1 > s.limit:
		s.err, s.pending, wake = ErrSlowConsumer, nil, true
	default:
		s.pending = append(s.pending, Record{Slot: slot, Seq: from, Batch: from, skipTo: to})
		wake = len(s.pending) >= max(1, s.limit/2)
	}
	s.mu.Unlock()
	if wake {
		s.signal()
	}
}

// Ready is signalled when Take has something to return (the bell's
// channel when the subscriber shares one).
func (s *Sub) Ready() <-chan struct{} {
	if s.bell != nil {
		return s.bell.ch
	}
	return s.ready
}

// Take returns the records queued so far (nil if none), or the error that
// ended the subscriber. Records queued before a cut are not returned: the
// reader resumes from its own position.
func (s *Sub) Take() ([]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	recs := s.pending
	s.pending = nil
	return recs, nil
}

// Close ends the subscriber and removes it from the hub; safe to call more
// than once, from any goroutine.
func (s *Sub) Close() {
	s.once.Do(func() {
		s.end(ErrClosed)
		s.hub.remove(s)
	})
}

// end ends the subscriber with err unless it has ended already.
func (s *Sub) end(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.pending = nil
	s.mu.Unlock()
	s.signal()
}

// signal wakes the reader: its own channel, or the bell it shares.
func (s *Sub) signal() {
	if s.bell != nil {
		s.bell.ring(s)
		return
	}
	select {
	case s.ready <- struct{}{}:
	default:
	}
}
