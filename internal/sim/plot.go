package sim

import (
	"fmt"
	"html"
	"slices"
	"strings"
)

// PlotKind is the measure a plot shows per node over time.
type PlotKind int

// The measures.
const (
	PlotLoad     PlotKind = iota // ops/s of the groups a node leads
	PlotReplicas                 // replicas the controller places on a node
	PlotLeaders                  // groups a node leads
)

func (k PlotKind) title() string {
	return [...]string{"load per node (ops/s)", "replicas per node", "leaders per node"}[k]
}

func (k PlotKind) of(s Sample, i int) float64 {
	switch k {
	case PlotReplicas:
		return float64(s.Replicas[i])
	case PlotLeaders:
		return float64(s.Leaders[i])
	}
	return s.Load[i]
}

// maxLines: with more nodes than this a plot draws the minimum, median
// and maximum over the nodes instead of a line per node.
const maxLines = 24

// Plot draws one measure of a run per node over simulated time, as SVG.
func Plot(rep Report, k PlotKind) []byte {
	const w, h, left, bottom, top, right = 800.0, 320.0, 60.0, 40.0, 30.0, 20.0
	series := map[string][][2]float64{}
	var names []string
	add := func(name string, x, y float64) {
		if _, ok := series[name]; !ok {
			names = append(names, name)
		}
		series[name] = append(series[name], [2]float64{x, y})
	}
	nodes := 0
	for _, s := range rep.Samples {
		nodes = max(nodes, len(s.Nodes))
	}
	ymax, xmax := 1.0, max(rep.Simulated.Minutes(), 1)
	for _, s := range rep.Samples {
		x := s.At.Minutes()
		if nodes <= maxLines {
			for i, id := range s.Nodes {
				y := k.of(s, i)
				add(fmt.Sprintf("n%d", id), x, y)
				ymax = max(ymax, y)
			}
			continue
		}
		var vals []float64
		for i := range s.Nodes {
			vals = append(vals, k.of(s, i))
		}
		if len(vals) == 0 {
			continue
		}
		slices.Sort(vals)
		add("max", x, vals[len(vals)-1])
		add("median", x, vals[len(vals)/2])
		add("min", x, vals[0])
		ymax = max(ymax, vals[len(vals)-1])
	}
	ymax *= 1.1
	px := func(x float64) float64 { return left + x/xmax*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/ymax*(h-bottom-top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18" font-size="13">%s — %s</text>`+"\n",
		left, html.EscapeString(rep.Scenario), k.title())
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#333"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#333"/>`+"\n",
		left, h-bottom, w-right, h-bottom, left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		y := ymax / 1.1 * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%.4g</text><line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/>`+"\n",
			left-4, py(y)+4, y, left, py(y), w-right, py(y))
		x := xmax * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%.0f min</text>`+"\n", px(x), h-bottom+16, x)
	}
	for i, name := range names {
		var pts []string
		for _, p := range series[name] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		hue := (i * 360 / max(len(names), 1)) % 360
		fmt.Fprintf(&b, `<polyline fill="none" stroke="hsl(%d,65%%,42%%)" stroke-width="1.2" points="%s"><title>%s</title></polyline>`+"\n",
			hue, strings.Join(pts, " "), name)
	}
	if nodes > maxLines {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%d nodes: the maximum, median and minimum over them</text>`+"\n", left+10, top+12, nodes)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
