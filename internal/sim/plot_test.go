package sim

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestPlotDrawsEachNodeOrTheirRange: a plot is well-formed SVG with a line
// per node while there are few nodes (named after them, one point per
// sample), and the maximum, median and minimum over the nodes past
// maxLines — a thousand lines would be read by nobody.
func TestPlotDrawsEachNodeOrTheirRange(t *testing.T) {
	sample := func(at time.Duration, nodes int) Sample {
		s := Sample{At: at}
		for i := 1; i <= nodes; i++ {
			s.Nodes = append(s.Nodes, slotstore.NodeID(i))
			s.Replicas, s.Leaders = append(s.Replicas, i), append(s.Leaders, i%3)
			s.Load = append(s.Load, float64(100*i))
		}
		return s
	}
	for _, tc := range []struct {
		nodes int
		lines []string
	}{
		{3, []string{"n1", "n2", "n3"}},
		{maxLines + 1, []string{"max", "median", "min"}},
	} {
		rep := Report{Scenario: "plot", Simulated: 10 * time.Minute,
			Samples: []Sample{sample(0, tc.nodes), sample(5*time.Minute, tc.nodes), sample(10*time.Minute, tc.nodes)}}
		for _, k := range []PlotKind{PlotLoad, PlotReplicas, PlotLeaders} {
			var svg struct {
				Lines []struct {
					Points string `xml:"points,attr"`
					Title  string `xml:"title"`
				} `xml:"polyline"`
			}
			b := Plot(rep, k)
			if err := xml.Unmarshal(b, &svg); err != nil {
				t.Fatalf("%d nodes, plot %d: not well-formed: %v", tc.nodes, k, err)
			}
			var titles []string
			for _, l := range svg.Lines {
				titles = append(titles, l.Title)
				if n := len(strings.Fields(l.Points)); n != 3 {
					t.Fatalf("%d nodes, plot %d, line %s: %d points, want one per sample", tc.nodes, k, l.Title, n)
				}
			}
			if strings.Join(titles, " ") != strings.Join(tc.lines, " ") {
				t.Fatalf("%d nodes, plot %d: lines %v, want %v", tc.nodes, k, titles, tc.lines)
			}
		}
	}
}
