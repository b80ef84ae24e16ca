package console

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The console's charts page: every node's recent vital signs (package
// history keeps them on each node; this node asks the others over the peer
// port), one server-rendered SVG chart per measure with one line per node —
// readable without JavaScript; htmx only refreshes it.

// chartsPages serves the charts page.
type chartsPages struct{ *console }

// maxChartedNodes bounds the nodes asked for their history per render
// (each answer is up to ~40 KB); chartAskTimeout bounds each ask.
const (
	maxChartedNodes = 32
	chartAskTimeout = 2 * time.Second
)

// Chart geometry, in SVG user units.
const (
	chartW, chartH           = 460, 150
	chartLeft, chartRight    = 52, 8
	chartTop, chartBottom    = 8, 20
	chartPlotW, chartPlotH   = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
	chartYTicks, chartXTicks = 4, 4
)

// palette colours the lines by node (or code), in order; colour is never
// the only signal: the legend names each line and its latest value.
var palette = []string{"#0b57b0", "#c0392b", "#1b6e3a", "#8a5a00", "#6c3483", "#117a8b", "#5b6570", "#d35400"}

// ChartsProps is the charts page.
type ChartsProps struct {
	Nodes   []ChartNode
	Charts  []Chart
	Omitted int // registered nodes past maxChartedNodes
	Now     time.Time
}

// ChartNode is one node's history, or why it is missing.
type ChartNode struct {
	ID      slotstore.NodeID
	Color   string
	History slotstore.NodeHistory
	Latest  *slotstore.HistoryPoint
	Err     string
}

// Chart is one measure over time.
type Chart struct {
	ID, Title, Unit string
	Lines           []ChartLine
	YTicks, XTicks  []ChartTick
	Empty           bool // no point at all yet
}

// ChartLine is one series: its SVG polyline points and latest value.
type ChartLine struct {
	Name, Color, Points, Latest string
}

// ChartTick is an axis label at a position along its axis.
type ChartTick struct {
	Pos   float64
	Label string
}

// measure is one chart's definition: how to read its value from a point.
type measure struct {
	id, title, unit string
	value           func(slotstore.HistoryPoint) float64
	format          func(float64) string
}

var measures = []measure{
	{"writes", "Writes", "per s", func(p slotstore.HistoryPoint) float64 { return p.Writes }, sig3},
	{"reads", "Reads", "per s", func(p slotstore.HistoryPoint) float64 { return p.Reads }, sig3},
	{"p99", "API latency p99", "ms", func(p slotstore.HistoryPoint) float64 { return p.P99Ms }, sig3},
	{"leader-changes", "Leader changes", "per step", func(p slotstore.HistoryPoint) float64 { return p.LeaderChanges }, sig3},
	{"apply-lag", "Apply lag", "entries", func(p slotstore.HistoryPoint) float64 { return p.ApplyLag }, sig3},
	{"cpu", "CPU", "cores", func(p slotstore.HistoryPoint) float64 { return p.CPUCores }, sig3},
	{"rss", "Memory (RSS)", "MiB", func(p slotstore.HistoryPoint) float64 { return p.RSSBytes / (1 << 20) }, sig3},
	{"disk", "Disk (data directory)", "MiB", func(p slotstore.HistoryPoint) float64 { return p.DiskBytes / (1 << 20) }, sig3},
	{"goroutines", "Goroutines", "", func(p slotstore.HistoryPoint) float64 { return p.Goroutines }, sig3},
}

// sig3 formats a chart value: three significant digits, no exponent.
func sig3(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

func (c chartsPages) charts(ctx context.Context) ChartsProps {
	p := ChartsProps{Now: c.now()}
	nodes := c.src.Nodes()
	if len(nodes) > maxChartedNodes {
		p.Omitted = len(nodes) - maxChartedNodes
		nodes = nodes[:maxChartedNodes]
	}
	if len(nodes) == 0 { // not registered yet: this node alone
		nodes = []slotstore.NodeInfo{{ID: c.src.NodeID()}}
	}
	p.Nodes = make([]ChartNode, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		p.Nodes[i] = ChartNode{ID: n.ID, Color: palette[i%len(palette)]}
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, chartAskTimeout)
			defer cancel()
			h, err := c.src.History().Node(actx, n.ID)
			if err != nil {
				p.Nodes[i].Err = errMessage(err)
				return
			}
			p.Nodes[i].History = h
			if len(h.Points) > 0 {
				p.Nodes[i].Latest = &h.Points[len(h.Points)-1]
			}
		})
	}
	wg.Wait()
	from, to := chartSpan(p.Nodes, p.Now)
	for _, m := range measures {
		var lines []series
		for _, n := range p.Nodes {
			s := series{name: nodeName(n.ID), color: n.Color}
			for _, pt := range n.History.Points {
				s.at = append(s.at, pt.AtMs)
				s.v = append(s.v, m.value(pt))
			}
			lines = append(lines, s)
		}
		p.Charts = append(p.Charts, plot(m.id, m.title, m.unit, lines, from, to, m.format))
	}
	p.Charts = slices.Insert(p.Charts, 3, plot("errors", "API errors by status", "per s", errorSeries(p.Nodes), from, to, sig3))
	return p
}

// errorSeries sums the nodes' error rates by HTTP status: one line per
// status seen, at each step (points of different nodes fall in the same
// step when their times round to it).
func errorSeries(nodes []ChartNode) []series {
	byCode := map[string]map[int64]float64{}
	stepSet := map[int64]bool{}
	for _, n := range nodes {
		step := max(n.History.StepMs, 1)
		for _, pt := range n.History.Points {
			at := pt.AtMs / step * step
			stepSet[at] = true
			for code, v := range pt.Errors {
				if byCode[code] == nil {
					byCode[code] = map[int64]float64{}
				}
				byCode[code][at] += v
			}
		}
	}
	steps := slices.Sorted(maps.Keys(stepSet))
	var out []series
	for i, code := range slices.Sorted(maps.Keys(byCode)) {
		s := series{name: code, color: palette[i%len(palette)]}
		for _, at := range steps {
			s.at = append(s.at, at)
			s.v = append(s.v, byCode[code][at])
		}
		out = append(out, s)
	}
	return out
}

// chartSpan is the time every chart spans: from the step of the oldest
// point of any node to now (at least a minute).
func chartSpan(nodes []ChartNode, now time.Time) (from, to int64) {
	to = now.UnixMilli()
	from = to - time.Minute.Milliseconds()
	for _, n := range nodes {
		if len(n.History.Points) > 0 {
			step := max(n.History.StepMs, 1)
			from = min(from, n.History.Points[0].AtMs/step*step)
		}
	}
	return from, to
}

// series is one line's values at times (ms), oldest first.
type series struct {
	name, color string
	at          []int64
	v           []float64
}

// plot lays the series out on one chart over [from, to]: y from 0 to a
// round maximum above the largest value.
func plot(id, title, unit string, ss []series, from, to int64, format func(float64) string) Chart {
	ch := Chart{ID: id, Title: title, Unit: unit, Empty: true}
	top := 0.0
	for _, s := range ss {
		for _, v := range s.v {
			top = max(top, v)
		}
	}
	top = niceCeil(top)
	span := float64(max(to-from, 1))
	for i := 0; i <= chartYTicks; i++ {
		v := top * float64(i) / chartYTicks
		ch.YTicks = append(ch.YTicks, ChartTick{Pos: chartTop + chartPlotH*(1-v/top), Label: format(v)})
	}
	for i := 0; i <= chartXTicks; i++ {
		at := from + int64(span*float64(i)/chartXTicks)
		ch.XTicks = append(ch.XTicks, ChartTick{Pos: chartLeft + chartPlotW*float64(i)/chartXTicks,
			Label: before(to - at)})
	}
	for _, s := range ss {
		var b strings.Builder
		for i, at := range s.at {
			if at < from {
				continue
			}
			x := chartLeft + chartPlotW*float64(at-from)/span
			y := chartTop + chartPlotH*(1-s.v[i]/top)
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
			ch.Empty = false
		}
		line := ChartLine{Name: s.name, Color: s.color, Points: strings.TrimSpace(b.String()), Latest: "—"}
		if n := len(s.v); n > 0 {
			line.Latest = format(s.v[n-1])
		}
		ch.Lines = append(ch.Lines, line)
	}
	return ch
}

// niceCeil is the smallest of 1, 2, 2.5, 5 × 10^k at least v (1 for 0).
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func (c chartsPages) chartsPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Charts", "charts", ChartsBody(c.charts(r.Context())))
}

func (c chartsPages) chartsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, ChartsLive(c.charts(r.Context())))
}

// f1 is an SVG coordinate.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// before labels a time axis: how long before now ("now" within a second).
func before(ms int64) string {
	if ms < 1000 {
		return "now"
	}
	return "−" + dur(ms)
}
