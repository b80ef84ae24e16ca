package console

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The console's heat map (like TiDB's Key Visualizer): the 256 hash slots
// down, time across, each cell coloured by the slot's writes (or reads) in
// that step, as the controller leader counted them from every node — with
// the tasks that moved hash slots marked where and when they ran, so a hot
// slot and what the balancer did about it show at a glance. The cells are a
// PNG the page's SVG frames (256 × 180 cells are too many for SVG
// elements); the hottest slots are also a table, for a reader without the
// picture.

// heatPages serves the heat map and its image.
type heatPages struct{ *console }

// Heat-map geometry: cell size in pixels, the slot axis's margin, and the
// fewest and most columns drawn (the newest at the right: a young map is
// as wide as a full one, its past empty).
const (
	heatCellW, heatCellH = 4, 2
	heatLeft, heatTop    = 44, 6
	heatMinColumns       = 180
	heatMaxColumns       = 360
	heatHotSlots         = 10
	heatHotWindow        = time.Minute // the hottest slots: over the last minute
)

// HeatProps is the heat-map page.
type HeatProps struct {
	By      string // "writes" or "reads"
	Err     string
	StepMs  int64
	FromMs  int64 // the first column's start
	Columns int
	Width   int // of the cells, pixels
	Height  int
	Max     uint32 // the hottest cell
	On      slotstore.NodeID
	Hot     []HotSlot
	// Unspreadable are the hash slots the balancer's plan names as too hot
	// for any group (slotstore.BalancePlan.Hot).
	Unspreadable []slotstore.HotSlot
	Moves        []HeatMove
	SlotTick     []ChartTick
	TimeTick     []ChartTick
	Now          time.Time
}

// HotSlot is one of the hottest slots over the last minute.
type HotSlot struct {
	Slot          slotstore.HashSlot
	Group         slotstore.GroupID
	Writes, Reads float64 // per second
}

// HeatMove is a task that moved hash slots, placed on the map.
type HeatMove struct {
	Task  slotstore.Task
	X     float64 // the task's start
	Y     float64 // its slot's row (-1: several slots)
	Label string
}

// heatMatrix is the heat laid out by column index: cells[col][slot].
type heatMatrix struct {
	cells  [][]uint32
	fromMs int64
	stepMs int64
	max    uint32
}

// matrix lays the columns out by time (a step without reports stays
// empty): at least heatMinColumns, at most the newest heatMaxColumns.
func matrix(h slotstore.SlotHeat, reads bool) heatMatrix {
	m := heatMatrix{stepMs: max(h.StepMs, 1)}
	if len(h.Columns) == 0 {
		return m
	}
	first, last := h.Columns[0].AtMs, h.Columns[len(h.Columns)-1].AtMs
	n := min(max((last-first)/m.stepMs+1, heatMinColumns), heatMaxColumns)
	m.fromMs = last - (n-1)*m.stepMs
	m.cells = make([][]uint32, n)
	for _, c := range h.Columns {
		i := (c.AtMs - m.fromMs) / m.stepMs
		vals := c.Writes
		if reads {
			vals = c.Reads
		}
		if i < 0 || i >= int64(len(m.cells)) || len(vals) != slotstore.HashSlotCount {
			continue
		}
		m.cells[i] = vals
		for _, v := range vals {
			m.max = max(m.max, v)
		}
	}
	return m
}

func (c heatPages) heat(ctx context.Context, by string) HeatProps {
	p := HeatProps{By: by, Now: c.now()}
	h, err := c.src.History().Heat(ctx)
	if err != nil {
		p.Err = errMessage(err)
		return p
	}
	m := matrix(h, by == "reads")
	p.StepMs, p.FromMs, p.Columns, p.Max, p.On = m.stepMs, m.fromMs, len(m.cells), m.max, h.Aggregator
	p.Width, p.Height = max(p.Columns, 1)*heatCellW, slotstore.HashSlotCount*heatCellH
	for s := 0; s < slotstore.HashSlotCount; s += 32 {
		p.SlotTick = append(p.SlotTick, ChartTick{Pos: float64(heatTop + s*heatCellH), Label: fmt.Sprint(s)})
	}
	if p.Columns > 0 {
		to := m.fromMs + int64(p.Columns)*m.stepMs
		for i := 0; i <= 4; i++ {
			at := m.fromMs + (to-m.fromMs)*int64(i)/4
			p.TimeTick = append(p.TimeTick, ChartTick{Pos: float64(heatLeft) + float64(p.Width)*float64(i)/4, Label: before(p.Now.UnixMilli() - at)})
		}
	}
	p.Hot = hottest(h, c.src.SlotMap(), p.Now)
	if plan, err := c.src.BalancerPlan(ctx); err == nil {
		p.Unspreadable = plan.Hot
	}
	for _, t := range c.src.Tasks() {
		if t.HashSlot == nil && len(t.HashSlots) == 0 && t.Moved == 0 {
			continue // moves no hash slot
		}
		if p.Columns == 0 || t.UpdatedAtMs < m.fromMs {
			continue
		}
		mv := HeatMove{Task: t, X: float64(heatLeft) + float64(max(t.CreatedAtMs-m.fromMs, 0))/float64(m.stepMs)*heatCellW, Y: -1,
			Label: fmt.Sprintf("task %d %s: group %d → group %d (%s)", t.ID, t.Kind, t.Group, t.ToGroup, t.Status)}
		if t.HashSlot != nil && t.Kind == "slot_migration" {
			mv.Y = float64(heatTop + int(*t.HashSlot)*heatCellH + heatCellH/2)
			mv.Label = fmt.Sprintf("task %d: hash slot %d, group %d → group %d (%s)", t.ID, *t.HashSlot, t.Group, t.ToGroup, t.Status)
		}
		p.Moves = append(p.Moves, mv)
	}
	return p
}

// hottest are the slots with the most operations over the last minute,
// per second of the steps counted in it.
func hottest(h slotstore.SlotHeat, slots [slotstore.HashSlotCount]slotstore.GroupID, now time.Time) []HotSlot {
	var sum [slotstore.HashSlotCount]HotSlot
	since := now.Add(-heatHotWindow).UnixMilli()
	var span int64
	for _, c := range h.Columns {
		if c.AtMs+h.StepMs <= since {
			continue
		}
		span += h.StepMs
		for i := range slotstore.HashSlotCount {
			if len(c.Writes) == slotstore.HashSlotCount {
				sum[i].Writes += float64(c.Writes[i])
			}
			if len(c.Reads) == slotstore.HashSlotCount {
				sum[i].Reads += float64(c.Reads[i])
			}
		}
	}
	if span == 0 {
		return nil
	}
	var out []HotSlot
	for i, s := range sum {
		if s.Writes+s.Reads == 0 {
			continue
		}
		secs := float64(span) / 1000
		out = append(out, HotSlot{Slot: slotstore.HashSlot(i), Group: slots[i], Writes: s.Writes / secs, Reads: s.Reads / secs})
	}
	slices.SortStableFunc(out, func(a, b HotSlot) int {
		return cmp.Compare(b.Writes+b.Reads, a.Writes+a.Reads)
	})
	return out[:min(len(out), heatHotSlots)]
}

// heatColor maps v of the hottest max to a colour: a pale background for
// none, then yellow to dark red on a logarithmic scale (a hot slot stands
// out without hiding the merely busy).
func heatColor(v, hottest uint32) color.RGBA {
	if v == 0 || hottest == 0 {
		return color.RGBA{0xf1, 0xf4, 0xf7, 0xff}
	}
	f := math.Log1p(float64(v)) / math.Log1p(float64(hottest))
	lerp := func(a, b uint8, t float64) uint8 { return uint8(float64(a) + (float64(b)-float64(a))*t) }
	if f < .5 {
		t := f * 2
		return color.RGBA{lerp(0xff, 0xf3, t), lerp(0xf0, 0x9c, t), lerp(0xb3, 0x12, t), 0xff}
	}
	t := (f - .5) * 2
	return color.RGBA{lerp(0xf3, 0x8b, t), lerp(0x9c, 0x0a, t), lerp(0x12, 0x0a, t), 0xff}
}

// image draws the matrix, one heatCellW × heatCellH cell per slot and step.
func (m heatMatrix) image() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, max(len(m.cells), 1)*heatCellW, slotstore.HashSlotCount*heatCellH))
	for col := range max(len(m.cells), 1) {
		for slot := range slotstore.HashSlotCount {
			var v uint32
			if col < len(m.cells) && m.cells[col] != nil {
				v = m.cells[col][slot]
			}
			c := heatColor(v, m.max)
			for dx := range heatCellW {
				for dy := range heatCellH {
					img.SetRGBA(col*heatCellW+dx, slot*heatCellH+dy, c)
				}
			}
		}
	}
	return img
}

func heatBy(r *http.Request) string {
	if r.URL.Query().Get("by") == "reads" {
		return "reads"
	}
	return "writes"
}

func (c heatPages) heatPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Heat map", "heat", HeatBody(c.heat(r.Context(), heatBy(r))))
}

// heatImage serves the cells as a PNG (503 when no controller leader
// answers).
func (c heatPages) heatImage(w http.ResponseWriter, r *http.Request) {
	h, err := c.src.History().Heat(r.Context())
	if err != nil { // the API's wrapper turns it into the error JSON
		http.Error(w, errMessage(err), http.StatusServiceUnavailable)
		return
	}
	var b bytes.Buffer
	if err := png.Encode(&b, matrix(h, heatBy(r) == "reads").image()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}
