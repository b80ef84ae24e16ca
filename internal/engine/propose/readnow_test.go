package propose

import (
	"context"
	"testing"
	"time"
)

// TestReadNow: a leader under a valid lease answers a read at once only
// when its state machine has applied every update entry its log can have
// committed — what this process saved (Saved) and, below the first of it,
// what a log query listed — and the lease still holds after it looked.
// Each case breaks one condition; the last batcher case shows the read
// then takes a round.
func TestReadNow(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	type state struct {
		leader, term      uint64
		known             bool
		first, maxUpdate  uint64
		applied           uint64
		scannedTo, maxLst uint64
		grant             bool
	}
	good := state{leader: 1, term: 5, known: true, first: 11, maxUpdate: 20, applied: 20, scannedTo: 10, maxLst: 9, grant: true}
	for _, tc := range []struct {
		name string
		mod  func(*state)
		want bool
	}{
		{"everything saved is applied", func(*state) {}, true},
		{"a saved update not applied", func(s *state) { s.maxUpdate = 21 }, false},
		{"nothing saved in this process yet", func(s *state) { s.first, s.maxUpdate = 0, 0 }, false},
		{"entries below the first save never listed", func(s *state) { s.scannedTo = 9 }, false},
		{"a listed committed update not applied", func(s *state) { s.maxLst, s.applied, s.maxUpdate = 21, 20, 0 }, false},
		{"not the leader", func(s *state) { s.leader = 2 }, false},
		{"leader unknown", func(s *state) { s.known = false }, false},
		{"no lease", func(s *state) { s.grant = false }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.mod(&s)
			l := NewLease(time.Second, c.now)
			if s.grant {
				l.Grant(s.term, c.now())
			}
			r := &LeasedReadIndex{Replica: 1, Lease: l,
				Leader:  func() (uint64, uint64, bool) { return s.leader, s.term, s.known },
				Saved:   func() (uint64, uint64) { return s.first, s.maxUpdate },
				Applied: func() uint64 { return s.applied }}
			r.scanned(s.scannedTo, s.maxLst)
			if got := r.ReadNow(); got != tc.want {
				t.Fatalf("ReadNow() = %v, want %v", got, tc.want)
			}
			if n := r.NowReads(); n != map[bool]uint64{true: 1}[tc.want] {
				t.Fatalf("NowReads() = %d", n)
			}
		})
	}

	// The lease ends (or the term changes) while ReadNow reads the log's
	// record: what it read may be incomplete, so it answers nothing.
	l := NewLease(time.Second, c.now)
	l.Grant(5, c.now())
	term := uint64(5)
	r := &LeasedReadIndex{Replica: 1, Lease: l,
		Leader:  func() (uint64, uint64, bool) { return 1, term, true },
		Saved:   func() (uint64, uint64) { term = 6; return 11, 20 },
		Applied: func() uint64 { return 20 }}
	r.scanned(10, 0)
	if r.ReadNow() {
		t.Fatal("a term change during the check answered the read")
	}
	r.Saved = func() (uint64, uint64) { l.Revoke(0); return 11, 20 }
	term = 5
	l.Grant(5, c.now())
	if r.ReadNow() {
		t.Fatal("a lease revoked during the check answered the read")
	}

	// Through a batcher: a read answered at once starts no round; one that
	// is not runs the indexer's round.
	ri := &nowIndexer{now: true}
	b := NewReadBatcher(ri, time.Second)
	defer b.Close()
	if err := b.Wait(context.Background()); err != nil || ri.rounds != 0 {
		t.Fatalf("read answered at once: err %v, %d rounds; want none", err, ri.rounds)
	}
	ri.now = false
	if err := b.Wait(context.Background()); err != nil || ri.rounds != 1 {
		t.Fatalf("read that needs a round: err %v, %d rounds; want 1", err, ri.rounds)
	}
	b.Close()
	ri.now = true
	if err := b.Wait(context.Background()); err == nil {
		t.Fatal("a closed batcher answered a read")
	}
}

type nowIndexer struct {
	now    bool
	rounds int
}

func (n *nowIndexer) ReadNow() bool                   { return n.now }
func (n *nowIndexer) ReadIndex(context.Context) error { n.rounds++; return nil }
