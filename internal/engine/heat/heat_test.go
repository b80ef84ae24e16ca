package heat

import (
	"math"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func counts(m map[int]uint64) []uint64 {
	out := make([]uint64, slotstore.HashSlotCount)
	for i, v := range m {
		out[i] = v
	}
	return out
}

func TestCountersSnapshot(t *testing.T) {
	var c Counters
	if r, w := c.Snapshot(); r != nil || w != nil {
		t.Fatalf("idle counters: %v %v, want nil", r, w)
	}
	c.Read(3)
	c.Write(3)
	c.Write(255)
	c.Write(slotstore.HashSlot(300)) // out of range: ignored, no panic
	r, w := c.Snapshot()
	if r[3] != 1 || w[3] != 1 || w[255] != 1 {
		t.Fatalf("reads[3]=%d writes[3]=%d writes[255]=%d", r[3], w[3], w[255])
	}
	var nilCounters *Counters
	nilCounters.Write(1) // a node without counters counts nothing
}

func TestTrackerRates(t *testing.T) {
	tr := NewTracker(0, 0)
	t0 := time.Unix(1000, 0)
	tr.Observe(1, t0, counts(map[int]uint64{7: 100}), nil)
	if got := tr.Slots(t0, time.Minute)[7]; got != (Rate{}) {
		t.Fatalf("one report is no rate yet: %+v", got)
	}
	tr.Observe(1, t0.Add(time.Second), counts(map[int]uint64{7: 300}), counts(map[int]uint64{7: 50}))
	tr.Observe(2, t0, nil, nil)
	tr.Observe(2, t0.Add(2*time.Second), counts(map[int]uint64{7: 100}), nil)
	got := tr.Slots(t0.Add(2*time.Second), time.Minute)[7]
	if got.Reads != 250 || got.Writes != 50 {
		t.Fatalf("slot 7: %+v, want 200+50 reads/s, 50 writes/s", got)
	}
	// The load stops: after one half-life the rate is half of what it was.
	tr.Observe(1, t0.Add(time.Second+HalfLife), counts(map[int]uint64{7: 300}), counts(map[int]uint64{7: 50}))
	if r := tr.Node(1, t0.Add(time.Second+HalfLife), time.Minute); math.Abs(r.Reads-100) > 1e-9 || math.Abs(r.Writes-25) > 1e-9 {
		t.Fatalf("after a half-life: %+v, want 100 reads/s, 25 writes/s", r)
	}
	// A restart (counts fell) counts from zero, not as a negative rate.
	tr.Observe(2, t0.Add(3*time.Second), counts(map[int]uint64{7: 10}), nil)
	if r := tr.Node(2, t0.Add(3*time.Second), time.Minute); r.Reads < 0 {
		t.Fatalf("restart gave %+v", r)
	}
	// Stale series and forgotten nodes say nothing.
	if r := tr.Node(2, t0.Add(time.Hour), time.Minute); r != (Rate{}) {
		t.Fatalf("stale series: %+v", r)
	}
	tr.Forget(func(id slotstore.NodeID) bool { return id != 2 })
	if r := tr.Node(2, t0.Add(3*time.Second), time.Minute); r != (Rate{}) {
		t.Fatalf("forgotten node: %+v", r)
	}
	// A malformed report is ignored.
	tr.Observe(1, t0.Add(time.Hour), []uint64{1}, nil)
}

func TestHeatColumns(t *testing.T) {
	tr := NewTracker(10*time.Second, 3)
	t0 := time.Unix(1000, 0) // a step boundary
	tr.Observe(1, t0, nil, nil)
	tr.Observe(2, t0, nil, nil)
	if h := tr.Heat(); h.StepMs != 10000 || len(h.Columns) != 0 {
		t.Fatalf("first reports are no operations yet: %+v", h)
	}
	// Node 1 writes slot 7 and node 2 reads it within the first step; node
	// 1's next report falls in the second step.
	tr.Observe(1, t0.Add(2*time.Second), nil, counts(map[int]uint64{7: 40}))
	tr.Observe(2, t0.Add(3*time.Second), counts(map[int]uint64{7: 5}), nil)
	tr.Observe(1, t0.Add(12*time.Second), nil, counts(map[int]uint64{7: 50, 200: 1}))
	h := tr.Heat()
	if len(h.Columns) != 2 || h.Columns[0].AtMs != 1000_000 || h.Columns[1].AtMs != 1010_000 {
		t.Fatalf("columns: %+v", h.Columns)
	}
	if c := h.Columns[0]; c.Writes[7] != 40 || c.Reads[7] != 5 {
		t.Fatalf("first column: writes %d reads %d, want 40 and 5", c.Writes[7], c.Reads[7])
	}
	if c := h.Columns[1]; c.Reads != nil || c.Writes[7] != 10 || c.Writes[200] != 1 {
		t.Fatalf("second column: %+v", c)
	}
	// Only the last three columns stay; a step without reports has none.
	tr.Observe(1, t0.Add(31*time.Second), nil, counts(map[int]uint64{7: 50, 200: 1}))
	tr.Observe(1, t0.Add(45*time.Second), nil, counts(map[int]uint64{7: 51, 200: 1}))
	h = tr.Heat()
	if len(h.Columns) != 3 || h.Columns[0].AtMs != 1010_000 || h.Columns[2].AtMs != 1040_000 || h.Columns[2].Writes[7] != 1 {
		t.Fatalf("bounded columns: %+v", h.Columns)
	}
	if h.Columns[1].Writes != nil || h.Columns[1].Reads != nil {
		t.Fatalf("a step without operations holds none: %+v", h.Columns[1])
	}
}
