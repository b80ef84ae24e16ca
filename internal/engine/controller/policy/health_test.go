package policy

import (
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func TestNodeHealthStreaks(t *testing.T) {
	const after = 3 * time.Second
	t0 := time.Unix(1_800_000_000, 0)
	o := NewObservations()
	nodes := []slotstore.NodeID{1, 2, 3}
	report := func(id slotstore.NodeID, at time.Time) {
		o.mu.Lock()
		o.reports[id] = report{receivedAt: at}
		o.mu.Unlock()
	}
	health := func(now time.Time) map[slotstore.NodeID]slotstore.NodeHealth {
		out := map[slotstore.NodeID]slotstore.NodeHealth{}
		for _, h := range o.NodeHealth(now, nodes, 1) {
			out[h.Node] = h
		}
		return out
	}
	o.Lead(t0)
	report(1, t0)
	report(2, t0)
	o.UpdateHealth(t0, nodes, after)
	h := health(t0)
	if h[1].Health != slotstore.NodeReachable || h[3].Health != slotstore.NodeUnknown || h[3].ReportAgeMs != -1 {
		t.Fatalf("at the start: %+v", h)
	}
	// Node 3 never reports: unreachable once the limit passed since the
	// leadership began. Node 2 stops reporting at t0.
	for s := 1; s <= 5; s++ {
		now := t0.Add(time.Duration(s) * time.Second)
		report(1, now)
		o.UpdateHealth(now, nodes, after)
	}
	now := t0.Add(5 * time.Second)
	h = health(now)
	if h[1].Health != slotstore.NodeReachable || h[1].HealthyForMs != 5000 {
		t.Fatalf("node 1, never gone: %+v", h[1])
	}
	if h[2].Health != slotstore.NodeUnreachable || h[3].Health != slotstore.NodeUnreachable || h[2].HealthyForMs != -1 {
		t.Fatalf("nodes 2 and 3: %+v %+v", h[2], h[3])
	}
	if d, gap := o.HealthyFor(now, 2); !gap || d != 0 {
		t.Fatalf("node 2 streak while unreachable: %v %v", d, gap)
	}
	if _, gap := o.HealthyFor(now, 1); gap {
		t.Fatal("node 1 was never unreachable")
	}
	// Node 2 reports again at t0+6s: its streak starts there.
	report(2, t0.Add(6*time.Second))
	o.UpdateHealth(t0.Add(6*time.Second), nodes, after)
	if d, gap := o.HealthyFor(t0.Add(16*time.Second), 2); !gap || d != 10*time.Second {
		t.Fatalf("node 2 streak after it came back: %v %v", d, gap)
	}
	if h := health(t0.Add(7 * time.Second)); h[2].Health != slotstore.NodeReachable || h[2].HealthyForMs != 1000 {
		t.Fatalf("node 2 back: %+v", h[2])
	}
	// A new leadership forgets the old book.
	o.StepDown()
	o.Lead(t0.Add(time.Minute))
	if _, gap := o.HealthyFor(t0.Add(time.Minute), 2); gap {
		t.Fatal("a new controller leadership kept the old streaks")
	}
}

func TestTransferBackoff(t *testing.T) {
	p := Leadership{}
	p.EnsureDefaults()
	now := time.Unix(1_800_000_000, 0)
	b := NewBackoff(42)
	var prev time.Duration
	for i := 1; i <= 12; i++ {
		s := b.Failed(7, now, p)
		d := s.Until.Sub(now)
		nominal := min(p.BackoffBase<<(i-1), p.BackoffMax)
		if s.Failures != i || d < nominal*3/4 || d > nominal*5/4 {
			t.Fatalf("failure %d: %+v (%v), want %v ±25%%", i, s, d, nominal)
		}
		if i > 1 && nominal < p.BackoffMax && d <= prev/2 {
			t.Fatalf("failure %d: %v does not grow from %v", i, d, prev)
		}
		prev = d
	}
	if b.State(8).Failures != 0 {
		t.Fatal("another group is in back-off")
	}
	b.Succeeded(7)
	if s := b.State(7); s.Failures != 0 || !s.Until.IsZero() {
		t.Fatalf("a success left %+v", s)
	}
}
