package policy

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestDecideDataDriven runs the reconciler's decisions from
// testdata/decide: each case starts from the healthy view (group 1 on nodes
// 1–3, node 1 leads at term 4, node 2 is preferred, caught up and heard by
// the leader, every report 100 ms old) and the default policy, changes what
// its input lines say, and prints the decision or, for check, every
// blocker. Rewrite with `go test ./internal/engine/controller/policy
// -run TestDecideDataDriven -rewrite`.
//
// Directives: decide | decide-disk | check target=<node>. Input lines:
//
//	replica node=<n> [report=<ms>] [heard=<ms>] [unanswered=<ms>] [lag=<n>] [disruption=<kind>] [disrupted=<ms>] [role=<r>]
//	leader <node>                   the observed leader (0: none)
//	voters <n,…> | learners <n,…>   the observed membership
//	intent age=<duration>           when the preference was set
//	facts [inflight] [backoff=<failures>,<remaining>] [gap healthy-for=<duration>] [down]
//	policy hold-down=<duration>
//	disk-low <n,…>                  nodes whose disk is low (decide-disk: DecideDiskLow)
func TestDecideDataDriven(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	datadriven.RunTest(t, "testdata/decide", func(t *testing.T, d *datadriven.TestData) string {
		v, f := healthyView(now), facts(now)
		low := map[slotstore.NodeID]bool{}
		p := Leadership{}
		p.EnsureDefaults()
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			fields := strings.Fields(line)
			kv := map[string]string{}
			for _, w := range fields[1:] {
				k, val, _ := strings.Cut(w, "=")
				kv[k] = val
			}
			num := func(k string) int64 {
				n, err := strconv.ParseInt(kv[k], 10, 64)
				if err != nil {
					t.Fatalf("%s: %s=%q", d.Pos, k, kv[k])
				}
				return n
			}
			dur := func(k string) time.Duration {
				x, err := time.ParseDuration(kv[k])
				if err != nil {
					t.Fatalf("%s: %s=%q", d.Pos, k, kv[k])
				}
				return x
			}
			switch fields[0] {
			case "replica":
				r := &v.Replicas[num("node")-1]
				for k := range kv {
					switch k {
					case "report":
						r.ReportAgeMs = num(k)
					case "heard":
						r.HeardAgoMs = num(k)
					case "unanswered":
						r.UnansweredMs = num(k)
					case "lag":
						r.Lag = uint64(num(k))
					case "term":
						r.Term = uint64(num(k))
					case "disruption":
						r.Disruption = slotstore.Disruption(kv[k])
					case "disrupted":
						r.DisruptedAgoMs = num(k)
					case "role":
						r.Role = slotstore.ReplicaRole(kv[k])
					}
				}
			case "leader":
				n, _ := strconv.Atoi(fields[1])
				v.Leader = slotstore.NodeID(n)
			case "voters", "learners":
				var ns []slotstore.NodeID
				for _, s := range strings.Split(fields[1], ",") {
					n, _ := strconv.Atoi(s)
					ns = append(ns, slotstore.NodeID(n))
				}
				if fields[0] == "voters" {
					v.Voters = ns
				} else {
					v.Learners = ns
				}
			case "intent":
				v.PreferredSetAtMs = now.Add(-dur("age")).UnixMilli()
			case "facts":
				for _, w := range fields[1:] {
					switch k, val, _ := strings.Cut(w, "="); k {
					case "inflight":
						f.InFlight = true
					case "down":
						f.TargetDown, f.TargetGap = true, true
					case "gap":
						f.TargetGap = true
					case "healthy-for":
						f.TargetHealthyFor = dur("healthy-for")
					case "backoff":
						n, rest, _ := strings.Cut(val, ",")
						failures, _ := strconv.Atoi(n)
						left, _ := time.ParseDuration(rest)
						f.Backoff = BackoffState{Failures: failures, Until: now.Add(left)}
					}
				}
			case "policy":
				p.HoldDown = dur("hold-down")
			case "disk-low":
				for _, s := range strings.Split(fields[1], ",") {
					n, _ := strconv.Atoi(s)
					low[slotstore.NodeID(n)] = true
				}
			default:
				t.Fatalf("%s: unknown line %q", d.Pos, line)
			}
		}
		factsOf := func(n slotstore.NodeID) Facts {
			g := f
			g.TargetDiskLow = low[n]
			return g
		}
		switch d.Cmd {
		case "decide-disk":
			dec, target := DecideDiskLow(v, p, factsOf)
			if dec == nil {
				return "nothing to decide\n"
			}
			return fmt.Sprintf("%s %s: %s (target %d)\n", dec.Kind, dec.Reason, dec.Detail, target)
		case "decide":
			dec := DecidePreferred(v, p, factsOf(v.PreferredLeader))
			if dec == nil {
				return "nothing to decide\n"
			}
			return fmt.Sprintf("%s %s: %s\n", dec.Kind, dec.Reason, dec.Detail)
		case "check":
			var target int
			d.ScanArgs(t, "target", &target)
			pf := CheckTransfer(v, slotstore.NodeID(target), p, factsOf(slotstore.NodeID(target)))
			if pf.OK {
				return "ok\n"
			}
			var b strings.Builder
			for _, bl := range pf.Blockers {
				fmt.Fprintf(&b, "%s: %s\n", bl.Reason, bl.Detail)
			}
			return b.String()
		}
		t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
		return ""
	})
}
