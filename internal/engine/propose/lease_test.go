package propose

import (
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestLeaseDuration(t *testing.T) {
	for _, tc := range []struct {
		rtt      time.Duration
		election uint64
		want     time.Duration
	}{
		{50 * time.Millisecond, 10, 315 * time.Millisecond},
		{5 * time.Millisecond, 10, 31500 * time.Microsecond},
		{50 * time.Millisecond, 3, 0},
		{50 * time.Millisecond, 4, 45 * time.Millisecond},
	} {
		if got := LeaseDuration(tc.rtt, tc.election); got != tc.want {
			t.Errorf("LeaseDuration(%v, %d) = %v, want %v", tc.rtt, tc.election, got, tc.want)
		}
	}
}

func TestLease(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLease(100*time.Millisecond, c.now)
	if l.Valid(3) {
		t.Fatal("valid before any grant")
	}
	start := l.Now()
	c.advance(10 * time.Millisecond) // the round took 10ms
	l.Grant(3, start)
	if !l.Valid(3) || l.Valid(4) || l.Valid(0) {
		t.Fatal("a grant of term 3 must be valid for term 3 only")
	}
	// The lease runs from the round's start, not its end.
	c.advance(89 * time.Millisecond)
	if !l.Valid(3) {
		t.Fatal("expired early")
	}
	c.advance(time.Millisecond)
	if l.Valid(3) {
		t.Fatal("valid at start+duration")
	}
	// An older round never shortens a newer grant; a newer one extends.
	s2 := l.Now()
	l.Grant(3, s2)
	l.Grant(3, s2.Add(-50*time.Millisecond))
	c.advance(99 * time.Millisecond)
	if !l.Valid(3) {
		t.Fatal("an older round's grant shortened the lease")
	}
	// A grant of an older term after a newer one is ignored.
	l.Grant(2, l.Now())
	if !l.Valid(3) || l.Valid(2) {
		t.Fatal("an older term's grant replaced the lease")
	}
	// A new term replaces the lease.
	l.Grant(5, l.Now())
	if l.Valid(3) || !l.Valid(5) {
		t.Fatal("a new term's grant did not replace the lease")
	}
}

func TestLeaseRevoke(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLease(100*time.Millisecond, c.now)
	before := l.Now()
	l.Grant(1, before)
	c.advance(5 * time.Millisecond)
	inFlight := l.Now() // a round started before the transfer
	l.Revoke(50 * time.Millisecond)
	if l.Valid(1) {
		t.Fatal("valid after revoke")
	}
	c.advance(time.Millisecond)
	l.Grant(1, inFlight) // it completes after the revocation
	if l.Valid(1) {
		t.Fatal("a round that started before the revocation granted a lease")
	}
	c.advance(20 * time.Millisecond)
	l.Grant(1, l.Now()) // within the hold
	if l.Valid(1) {
		t.Fatal("a round that started within the hold granted a lease")
	}
	c.advance(30 * time.Millisecond)
	l.Grant(1, l.Now()) // the hold is over
	if !l.Valid(1) {
		t.Fatal("no grant after the hold")
	}
	if grants, _ := l.Stats(); grants != 2 {
		t.Fatalf("grants = %d, want 2", grants)
	}
}

func TestLeaseOff(t *testing.T) {
	l := NewLease(0, nil)
	l.Grant(1, l.Now())
	if l.Valid(1) {
		t.Fatal("a zero-length lease is never valid")
	}
	var none *Lease
	none.Grant(1, time.Now())
	none.Revoke(time.Second)
	if none.Valid(1) {
		t.Fatal("a nil lease is never valid")
	}
}
