package balance

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestPlanDataDriven runs the planner over the cluster states of
// testdata/plan and prints its plan. Rewrite with `go test
// ./internal/engine/controller/balance -run TestPlanDataDriven -rewrite`.
//
// Directive: plan. Input lines:
//
//	node <id> [state=<s>] [unreachable] [disk-low]
//	group <id> peers=<n,…> [leader=<n>] [preferred=<n> preferred-ago=<d>] slots=<a-b,c,…> [failed=<n,…>] [noquorum] [busy] [pinned]
//	load slots=<a-b,…> [reads=<x>] [writes=<y>]      per slot, ops/s
//	moved slot=<s> from=<g> to=<g> ago=<d>
//	tasks [running=<n>] [slot=<n>] [group=<n>]
//	drain-only                                        the balancer is paused
//	in-place-gated <why…>                             no rebuild in place (the cluster version)
//	cluster [rf=<n>] [initial=<n>]
//	config [max-tasks=<n>] [groups-per-node=<n>] [max-groups=<n>] [load-skew=<x>] [min-load=<x>]
func TestPlanDataDriven(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	datadriven.RunTest(t, "testdata/plan", func(t *testing.T, d *datadriven.TestData) string {
		in := Input{Now: now, ReplicationFactor: 3, InitialGroups: 1}
		var c Config
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			kv := map[string]string{}
			flags := map[string]bool{}
			for _, w := range fields[1:] {
				if k, v, ok := strings.Cut(w, "="); ok {
					kv[k] = v
				} else {
					flags[w] = true
				}
			}
			num := func(k string, def int) int {
				if kv[k] == "" {
					return def
				}
				n, err := strconv.Atoi(kv[k])
				if err != nil {
					t.Fatalf("%s: %s=%q", d.Pos, k, kv[k])
				}
				return n
			}
			float := func(k string) float64 {
				if kv[k] == "" {
					return 0
				}
				x, err := strconv.ParseFloat(kv[k], 64)
				if err != nil {
					t.Fatalf("%s: %s=%q", d.Pos, k, kv[k])
				}
				return x
			}
			ago := func(k string) time.Time {
				x, err := time.ParseDuration(kv[k])
				if err != nil {
					t.Fatalf("%s: %s=%q", d.Pos, k, kv[k])
				}
				return now.Add(-x)
			}
			switch fields[0] {
			case "node":
				id, _ := strconv.Atoi(fields[1])
				state := slotstore.NodeState(kv["state"])
				if state == "" {
					state = slotstore.NodeActive
				}
				in.Nodes = append(in.Nodes, Node{ID: slotstore.NodeID(id), State: state, Reachable: !flags["unreachable"], DiskLow: flags["disk-low"]})
			case "group":
				id, _ := strconv.Atoi(fields[1])
				g := Group{ID: slotstore.GroupID(id), Leader: slotstore.NodeID(num("leader", 0)), Quorum: !flags["noquorum"], Busy: flags["busy"], Pinned: flags["pinned"],
					PreferredLeader: slotstore.NodeID(num("preferred", 0)), Slots: slotsOf(t, kv["slots"])}
				if kv["preferred-ago"] != "" {
					g.PreferredSetAt = ago("preferred-ago")
				}
				for _, p := range strings.Split(kv["peers"], ",") {
					n, _ := strconv.Atoi(p)
					g.Peers = append(g.Peers, slotstore.NodeID(n))
				}
				if kv["failed"] != "" {
					for _, f := range strings.Split(kv["failed"], ",") {
						n, _ := strconv.Atoi(f)
						g.Failed = append(g.Failed, slotstore.NodeID(n))
					}
				}
				in.Groups = append(in.Groups, g)
			case "load":
				for _, s := range slotsOf(t, kv["slots"]) {
					in.SlotLoad[s] = Load{Reads: float("reads"), Writes: float("writes")}
				}
			case "moved":
				in.RecentMoves = append(in.RecentMoves, SlotMove{Slot: slotstore.HashSlot(num("slot", 0)),
					From: slotstore.GroupID(num("from", 0)), To: slotstore.GroupID(num("to", 0)), At: ago("ago")})
			case "drain-only":
				in.DrainOnly = true
			case "in-place-gated":
				in.InPlaceGated = strings.TrimSpace(strings.TrimPrefix(line, "in-place-gated"))
			case "moving":
				in.Moving = append(in.Moving, ReplicaMove{Group: slotstore.GroupID(num("group", 0)),
					From: slotstore.NodeID(num("from", 0)), To: slotstore.NodeID(num("to", 0))})
			case "tasks":
				in.Running, in.SlotTasks, in.GroupTasks = num("running", 0), num("slot", 0), num("group", 0)
			case "cluster":
				in.ReplicationFactor, in.InitialGroups = num("rf", 3), num("initial", 1)
			case "config":
				c.MaxTasks, c.GroupsPerNode, c.MaxGroups = num("max-tasks", 0), num("groups-per-node", 0), num("max-groups", 0)
				c.LoadSkew, c.MinLoad = float("load-skew"), float("min-load")
			default:
				t.Fatalf("%s: unknown line %q", d.Pos, line)
			}
		}
		return render(Decide(in, c))
	})
}

func render(p Plan) string {
	var b strings.Builder
	for _, a := range p.Actions {
		fmt.Fprintf(&b, "%s %s group=%d", a.Kind, a.Reason, a.Group)
		if a.ToGroup != 0 {
			fmt.Fprintf(&b, " to-group=%d", a.ToGroup)
		}
		if a.Kind == MoveSlot {
			fmt.Fprintf(&b, " slot=%d", a.HashSlot)
		}
		if a.From != 0 || a.To != 0 {
			fmt.Fprintf(&b, " node %d→%d", a.From, a.To)
		}
		fmt.Fprintf(&b, "\n  %s\n", a.Detail)
	}
	for _, h := range p.Hot {
		fmt.Fprintf(&b, "hot: slot=%d group=%d ops=%.0f of-mean=%.2f\n", h.Slot, h.Group, h.OpsPerSec, h.OfMean)
	}
	if p.Held != "" {
		fmt.Fprintf(&b, "held: %s", p.Held)
		if p.HeldReason != "" {
			fmt.Fprintf(&b, " [%s]", p.HeldReason)
		}
		b.WriteString("\n")
	}
	if len(p.Balanced) > 0 {
		fmt.Fprintf(&b, "balanced: %s\n", strings.Join(p.Balanced, " "))
	}
	if b.Len() == 0 {
		return "nothing\n"
	}
	return b.String()
}

func slotsOf(t *testing.T, spec string) []slotstore.HashSlot {
	var out []slotstore.HashSlot
	if spec == "" {
		return nil
	}
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			t.Fatalf("slots %q", spec)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				t.Fatalf("slots %q", spec)
			}
		}
		for s := a; s <= b; s++ {
			out = append(out, slotstore.HashSlot(s))
		}
	}
	return out
}
