package sim

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/short/*.sim")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := LoadScenario(f)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Simulate(sc)
			if err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + rep.Text())
			for _, f := range rep.Failed {
				t.Error(f)
			}
		})
	}
}

// TestRunsAreDeterministic: a scenario run twice makes the same moves and
// ends with the same placement (the simulated clock and the seeded world
// decide everything; the controller leader's concurrent observation only
// gathers).
func TestRunsAreDeterministic(t *testing.T) {
	var first string
	for i := range 2 {
		sc, err := LoadScenario("testdata/short/rack-loss.sim")
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRun(sc)
		if err != nil {
			t.Fatal(err)
		}
		for r.Elapsed() < sc.Duration {
			if err := r.Step(); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		st := r.state()
		var b strings.Builder
		fmt.Fprintf(&b, "%+v\n", r.rec.moves)
		for _, g := range st.GroupIDs() {
			fmt.Fprintf(&b, "g%d %v\n", g, st.Groups[g].Peers)
		}
		for _, d := range st.Decisions {
			fmt.Fprintf(&b, "%d %s %s %s\n", d.AtMs, d.Kind, d.Reason, d.Detail)
		}
		if i == 0 {
			first = b.String()
		} else if b.String() != first {
			t.Fatalf("two runs differ:\n%s\n---\n%s", first, b.String())
		}
	}
}
