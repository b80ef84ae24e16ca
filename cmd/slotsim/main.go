// Command slotsim runs control-plane scenarios on the simulator (package
// sim): the real controller, balancer and task executor against simulated
// nodes on a simulated clock. It prints a report per scenario, writes its
// plots, and exits 1 when an expectation failed.
//
//	slotsim [-out DIR] internal/sim/testdata/*.sim
//	slotsim -scale 100,250,500,1000 internal/sim/testdata/steady-1000.sim
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/slotmeta/slotmeta/internal/sim"
)

func main() {
	out := flag.String("out", "", "directory for each run's plots (SVG) and report")
	scale := flag.String("scale", "", "node counts to run the scenario at, comma-separated: a table of how the controller's cost grows")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: slotsim [-out DIR] [-scale N,N,…] SCENARIO.sim …")
		os.Exit(2)
	}
	failed := false
	for _, path := range flag.Args() {
		sc, err := sim.LoadScenario(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if *scale != "" {
			var sizes []int
			for _, s := range strings.Split(*scale, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil {
					fmt.Fprintln(os.Stderr, "-scale:", err)
					os.Exit(2)
				}
				sizes = append(sizes, n)
			}
			table, err := sim.Scale(path, sizes)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Print(table)
			continue
		}
		rep, err := sim.Simulate(sc)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		fmt.Print(rep.Text())
		failed = failed || len(rep.Failed) > 0
		if *out != "" {
			if err := writeRun(*out, rep); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}

// writeRun writes a run's report and plots into dir.
func writeRun(dir string, rep sim.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{
		rep.Scenario + ".txt":          []byte(rep.Text()),
		rep.Scenario + "-load.svg":     sim.Plot(rep, sim.PlotLoad),
		rep.Scenario + "-replicas.svg": sim.Plot(rep, sim.PlotReplicas),
		rep.Scenario + "-leaders.svg":  sim.Plot(rep, sim.PlotLeaders),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
