package heat

import (
	"math"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Heat-map defaults: ten-second columns, half an hour of them (180 columns
// of 2 KB at most: 360 KB on the controller leader).
const (
	DefaultStep    = 10 * time.Second
	DefaultColumns = 180
)

// columns keep the operations per hash slot per step, summed over the
// nodes, for the console's heat map. A node's counts between two of its
// reports are added to the step its later report falls in (reports come
// every observation round, far shorter than a step); steps are aligned to
// the Unix epoch, so columns of successive controller leaders line up.
// Unlike the rates, nothing is smoothed: a burst shows where it happened.
type columns struct {
	step time.Duration
	keep int
	cols []column // oldest first, at most keep
}

type column struct {
	at            time.Time
	reads, writes *[slotstore.HashSlotCount]uint32 // nil: none in the step
}

// add counts the operations of one report received at at.
func (c *columns) add(at time.Time, reads, writes *[slotstore.HashSlotCount]float64) {
	if c.step <= 0 {
		return
	}
	start := at.Truncate(c.step)
	n := len(c.cols)
	if n == 0 || start.After(c.cols[n-1].at) {
		c.cols = append(c.cols, column{at: start})
		if len(c.cols) > c.keep {
			c.cols = append(c.cols[:0], c.cols[len(c.cols)-c.keep:]...)
		}
		n = len(c.cols)
	}
	// A report older than the newest column (a clock step back) counts in it.
	col := &c.cols[n-1]
	col.reads = addCounts(col.reads, reads)
	col.writes = addCounts(col.writes, writes)
}

// addCounts adds d to into (allocated on the first operation), saturating.
func addCounts(into *[slotstore.HashSlotCount]uint32, d *[slotstore.HashSlotCount]float64) *[slotstore.HashSlotCount]uint32 {
	for i, v := range d {
		if v <= 0 {
			continue
		}
		if into == nil {
			into = new([slotstore.HashSlotCount]uint32)
		}
		into[i] = uint32(min(float64(into[i])+v, math.MaxUint32))
	}
	return into
}

// heat returns a copy of the columns.
func (c *columns) heat() slotstore.SlotHeat {
	out := slotstore.SlotHeat{StepMs: c.step.Milliseconds(), Columns: make([]slotstore.HeatColumn, 0, len(c.cols))}
	for _, col := range c.cols {
		hc := slotstore.HeatColumn{AtMs: col.at.UnixMilli()}
		if col.reads != nil {
			hc.Reads = append([]uint32(nil), col.reads[:]...)
		}
		if col.writes != nil {
			hc.Writes = append([]uint32(nil), col.writes[:]...)
		}
		out.Columns = append(out.Columns, hc)
	}
	return out
}
