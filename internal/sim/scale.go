package sim

import (
	"fmt"
	"strings"
	"time"
)

// Scale runs the scenario at path once per node count (its groups, load
// and events as written) and tabulates how the controller leader's cost
// and the controller state grow with the nodes.
func Scale(path string, nodes []int) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "| nodes | groups | round p50 | round max | plan p50 | plan max | plan alloc p50 | state | largest command | wall |\n")
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range nodes {
		sc, err := LoadScenario(path)
		if err != nil {
			return "", err
		}
		sc.Nodes = n
		if err := sc.validate(); err != nil {
			return "", err
		}
		rep, err := Simulate(sc)
		if err != nil {
			return "", fmt.Errorf("%d nodes: %w", n, err)
		}
		fmt.Fprintf(&b, "| %d | %d | %v | %v | %v | %v | %d KB | %d KB | %d B | %v |\n", rep.Nodes, rep.Groups,
			rep.RoundP50.Round(time.Microsecond), rep.RoundMax.Round(time.Microsecond), rep.PlanP50.Round(time.Microsecond),
			rep.PlanMax.Round(time.Microsecond), rep.PlanAllocP50>>10, rep.MaxStateBytes>>10, rep.MaxCommandBytes, rep.Wall.Round(time.Second))
	}
	return b.String(), nil
}
