package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// reportCmd renders JSON-line results as markdown: one table per target,
// errors, peak RSS per server and, when both -a and -b ran a workload, their
// ratio and the targets.
func reportCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("slotbench report", flag.ContinueOnError)
	a := fs.String("a", "slotmeta", "the target whose ops/s is the numerator")
	b := fs.String("b", "etcd", "the target to compare against")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("report: name one or more JSON-line result files")
	}
	var rs []*Result
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var r Result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				f.Close()
				return fmt.Errorf("%s: %w", name, err)
			}
			rs = append(rs, &r)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	report(out, rs, *a, *b)
	return nil
}

type rkey struct {
	target, workload string
	c                int
}

func workloadRank(w string) int {
	if i := slices.Index(workloads, w); i >= 0 {
		return i
	}
	return len(workloads)
}

func report(out io.Writer, rs []*Result, a, b string) {
	// The last result of each (target, workload, c) wins.
	last := map[rkey]*Result{}
	var targets []string
	for _, r := range rs {
		if r.Workload == "preload" {
			continue
		}
		t := r.Target
		if r.Client != "" {
			t += "+" + r.Client // slotmeta+smart: through the route-aware client
		}
		last[rkey{t, r.Workload, r.Concurrency}] = r
		if !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	keys := make([]rkey, 0, len(last))
	for k := range last {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		x, y := keys[i], keys[j]
		if x.target != y.target {
			return slices.Index(targets, x.target) < slices.Index(targets, y.target)
		}
		if x.workload != y.workload {
			return workloadRank(x.workload) < workloadRank(y.workload)
		}
		return x.c < y.c
	})
	for _, t := range targets {
		fmt.Fprintf(out, "### %s\n\n", t)
		fmt.Fprintln(out, "| workload | c | ops/s | p50 ms | p99 ms | p999 ms | max ms | ok | errors | server CPU ms/op | client CPU s | servers idle before (cores) | load 1m start→end |")
		fmt.Fprintln(out, "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- |")
		var notes []string
		for _, k := range keys {
			if k.target != t {
				continue
			}
			r := last[k]
			l := r.Latency
			cpu := "–"
			if len(r.Servers) > 0 {
				cpu = fmt.Sprintf("%.2f", r.CPUPerOp)
			}
			idle := "–"
			if r.IdleCores != nil {
				idle = fmt.Sprintf("%.2f", *r.IdleCores)
				if r.SettleWaitS > 0.5 {
					idle += fmt.Sprintf(" (after %.0fs)", r.SettleWaitS)
				}
			}
			fmt.Fprintf(out, "| %s | %d | %.0f | %.2f | %.2f | %.2f | %.1f | %d | %d | %s | %.1f | %s | %s→%s |\n",
				k.workload, k.c, r.OpsPerSec, l.P50, l.P99, l.P999, l.Max, r.OK, r.Errors, cpu, r.ClientCPU, idle, load1(r.LoadStart), load1(r.LoadEnd))
			if len(r.ErrorsBy) > 0 {
				notes = append(notes, fmt.Sprintf("%s c=%d errors: %s", k.workload, k.c, errorList(r.ErrorsBy)))
			}
			if len(r.ByKind) > 1 {
				var parts []string
				for _, kind := range []string{"read", "write"} {
					if bk, ok := r.ByKind[kind]; ok {
						parts = append(parts, fmt.Sprintf("%s %d ops p50 %.2f / p99 %.2f ms", kind, bk.N, bk.P50, bk.P99))
					}
				}
				notes = append(notes, fmt.Sprintf("%s c=%d: %s", k.workload, k.c, strings.Join(parts, "; ")))
			}
		}
		fmt.Fprintln(out)
		for _, n := range notes {
			fmt.Fprintf(out, "- %s\n", n)
		}
		if len(notes) > 0 {
			fmt.Fprintln(out)
		}
	}

	// Peak RSS: VmHWM only grows, so the largest reading is the peak.
	type peak struct {
		hwm, rss float64
		name     string
	}
	peaks := map[string]map[int]*peak{}
	for _, r := range rs {
		for _, s := range r.Servers {
			if s.Err != "" {
				continue
			}
			if peaks[r.Target] == nil {
				peaks[r.Target] = map[int]*peak{}
			}
			p := peaks[r.Target][s.PID]
			if p == nil {
				p = &peak{name: s.Name}
				peaks[r.Target][s.PID] = p
			}
			p.hwm = max(p.hwm, s.HWMMiB)
			p.rss = s.RSSMiB
		}
	}
	if len(peaks) > 0 {
		fmt.Fprintln(out, "### Server memory (VmHWM = peak RSS over the process's life)")
		fmt.Fprintln(out)
		fmt.Fprintln(out, "| target | pid | process | peak RSS MiB | RSS at the last run MiB |")
		fmt.Fprintln(out, "| --- | --: | --- | --: | --: |")
		for _, t := range targets {
			pids := make([]int, 0, len(peaks[t]))
			for pid := range peaks[t] {
				pids = append(pids, pid)
			}
			sort.Ints(pids)
			for _, pid := range pids {
				p := peaks[t][pid]
				fmt.Fprintf(out, "| %s | %d | %s | %.1f | %.1f |\n", t, pid, p.name, p.hwm, p.rss)
			}
		}
		fmt.Fprintln(out)
	}

	if !slices.Contains(targets, a) || !slices.Contains(targets, b) {
		return
	}
	fmt.Fprintf(out, "### %s vs %s\n\n", a, b)
	fmt.Fprintf(out, "| workload | c | %s ops/s | %s ops/s | ratio | %s p50 ms | %s p50 ms | %s p99 ms | %s p99 ms | %s CPU ms/op | %s CPU ms/op |\n", a, b, a, b, a, b, a, b)
	fmt.Fprintln(out, "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |")
	for _, k := range keys {
		if k.target != a {
			continue
		}
		ra, rb := last[k], last[rkey{b, k.workload, k.c}]
		if rb == nil {
			continue
		}
		fmt.Fprintf(out, "| %s | %d | %.0f | %.0f | %s | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f |\n", k.workload, k.c,
			ra.OpsPerSec, rb.OpsPerSec, ratio(ra.OpsPerSec, rb.OpsPerSec), ra.Latency.P50, rb.Latency.P50, ra.Latency.P99, rb.Latency.P99,
			ra.CPUPerOp, rb.CPUPerOp)
	}
	fmt.Fprintln(out)

	fmt.Fprintln(out, "### The issue's targets")
	fmt.Fprintln(out)
	get := func(t, w string, c int) *Result { return last[rkey{t, w, c}] }
	verdict := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**not met**"
	}
	// Issue 49's, against etcd 3.6 through its own client.
	if ra, rb := get(a, "kv-put", 64), get(b, "kv-put", 64); ra != nil && rb != nil {
		x := ra.OpsPerSec / max(rb.OpsPerSec, 1e-9)
		fmt.Fprintf(out, "- kv-put c=64 ≥ 1.2× %s: %.2f× (CPU %.3f vs %.3f ms/op) — %s\n", b, x, ra.CPUPerOp, rb.CPUPerOp, verdict(x >= 1.2))
	}
	if ra, rb := get(a, "get-linearizable", 64), get(b, "get-linearizable", 64); ra != nil && rb != nil {
		x := ra.OpsPerSec / max(rb.OpsPerSec, 1e-9)
		fmt.Fprintf(out, "- get-linearizable c=64 ≥ 2× %s: %.2f× — %s\n", b, x, verdict(x >= 2))
	}
	if ra, rb := get(a, "kv-put", 1), get(b, "kv-put", 1); ra != nil && rb != nil {
		fmt.Fprintf(out, "- c=1 write (kv-put) p50 ≤ 0.8× %s's: %.2f vs %.2f ms (%.2f×) — %s\n", b, ra.Latency.P50, rb.Latency.P50,
			ra.Latency.P50/max(rb.Latency.P50, 1e-9), verdict(ra.Latency.P50 <= 0.8*rb.Latency.P50))
	}
	if ra, rb := get(a, "batch-put", 64), get(a, "kv-put", 64); ra != nil && rb != nil && rb.OpsPerSec > 0 {
		x := ra.KeysPerSec / rb.OpsPerSec
		fmt.Fprintf(out, "- batch-put c=64 ≥ 5× %s's kv-put c=64 in keys/s: %.0f vs %.0f keys/s (%.2f×) — %s\n", a, ra.KeysPerSec, rb.OpsPerSec, x, verdict(x >= 5))
	}
	if p := peaks[a]; len(p) > 0 {
		worst := 0.0
		for _, x := range p {
			worst = max(worst, x.hwm)
		}
		fmt.Fprintf(out, "- peak RSS ≤ 300 MiB per %s server: largest %.1f MiB — %s\n", a, worst, verdict(worst <= 300))
	}
	fmt.Fprintln(out)
}

func ratio(x, y float64) string {
	if y == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", x/y)
}

func load1(l []float64) string {
	if len(l) == 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f", l[0])
}

func errorList(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("`%s` ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
