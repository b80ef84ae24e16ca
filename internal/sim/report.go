package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what a run showed, and which of its scenario's expectations
// failed.
type Report struct {
	Scenario  string
	Simulated time.Duration
	Wall      time.Duration
	Nodes     int // registered at the end
	Groups    int
	// Converged is how long after the scenario's last event the
	// controller stopped planning and running tasks (-1: not by the end).
	Converged time.Duration
	Moves     Moves
	// The spread at the end, between active nodes that are up.
	ReplicaSkew, LeaderSkew int
	GroupLoadSkew           float64 // the busiest group's load over the mean
	QuorumLost              int     // groups that lacked a quorum of live voters at some point
	MaxLeaderless           int     // groups without a live leader at once, at most
	Drained                 bool    // every node asked to drain holds no replica
	HotSlotGroupSlots       int     // hash slots of the hot slot's group at the end
	// The controller leader's cost on this machine: a round (observe,
	// reconcile, tasks, balance) and one balancer plan, in wall time, and
	// the bytes one plan allocates.
	RoundP50, RoundMax time.Duration
	PlanP50, PlanMax   time.Duration
	PlanAllocP50       uint64
	MaxStateBytes      int // the controller state, encoded, at its largest
	MaxCommandBytes    int // the largest controller command
	Samples            []Sample
	Failed             []string // expectations not met
}

// Report checks the run's expectations and reports it.
func (r *Run) Report(wall time.Duration) Report {
	rec := r.rec
	st := r.state()
	out := Report{Scenario: r.sc.Name, Simulated: r.Elapsed(), Wall: wall, Nodes: len(st.Nodes), Groups: len(st.Groups),
		Moves: rec.moves, QuorumLost: len(rec.quorumLost), MaxLeaderless: rec.maxLeaderless,
		MaxStateBytes: rec.maxState, MaxCommandBytes: rec.maxCommand, Samples: rec.samples, Drained: true}
	out.RoundP50, out.RoundMax = quantile(rec.rounds, 0.5), quantile(rec.rounds, 1)
	out.PlanP50, out.PlanMax = quantile(rec.plans, 0.5), quantile(rec.plans, 1)
	out.PlanAllocP50 = quantile(rec.planAlloc, 0.5)
	end := r.sc.lastEventEnd(len(st.Nodes))
	quiet := 3 * r.w.params.BalanceInterval
	switch {
	case r.Elapsed()-rec.lastActivity < quiet:
		out.Converged = -1
	case rec.lastActivity <= end:
		out.Converged = 0
	default:
		out.Converged = rec.lastActivity - end
	}
	if n := len(rec.samples); n > 0 {
		last := rec.samples[n-1]
		out.ReplicaSkew = spread(last.Replicas)
		out.LeaderSkew = spread(last.Leaders)
	}
	out.GroupLoadSkew = r.groupLoadSkew()
	for _, id := range r.drained {
		if st.ReplicasOn(id) > 0 {
			out.Drained = false
		}
	}
	if r.hot {
		if table, err := st.Table(); err == nil {
			out.HotSlotGroupSlots = len(table.SlotsOf(table.Group(r.hotSlot)))
		}
	}
	for _, e := range r.sc.Expect {
		if ok, got := out.check(e); !ok {
			out.Failed = append(out.Failed, fmt.Sprintf("expect %s: got %s", e.What, got))
		}
	}
	return out
}

func (r *Run) groupLoadSkew() float64 {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	load := map[uint64]float64{}
	for hs, gid := range r.w.owner {
		load[uint64(gid)] += r.w.slotRate[hs]
	}
	if len(load) == 0 {
		return 0
	}
	total, most := 0.0, 0.0
	for _, v := range load {
		total += v
		most = max(most, v)
	}
	if total == 0 {
		return 0
	}
	return most / (total / float64(len(load)))
}

// check says whether the report meets e, and what it got.
func (rep Report) check(e Expectation) (bool, string) {
	var got float64
	switch e.Name {
	case "converged":
		if rep.Converged < 0 {
			return false, "not converged by the end"
		}
		return rep.Converged <= e.Dur, rep.Converged.String()
	case "drained":
		return rep.Drained, fmt.Sprint(rep.Drained)
	case "replica-skew":
		got = float64(rep.ReplicaSkew)
	case "leader-skew":
		got = float64(rep.LeaderSkew)
	case "group-load-skew":
		got = rep.GroupLoadSkew
	case "undone":
		got = float64(rep.Moves.Undone)
	case "failed":
		got = float64(rep.Moves.Failed)
	case "quorum-lost":
		got = float64(rep.QuorumLost)
	case "hot-slot-group-slots":
		got = float64(rep.HotSlotGroupSlots)
	case "slot-moves":
		got = float64(rep.Moves.Slot)
	}
	return got <= e.Value, fmt.Sprintf("%.4g", got)
}

// Text is the report as a few lines of text.
func (rep Report) Text() string {
	var b strings.Builder
	conv := "not converged by the end"
	if rep.Converged >= 0 {
		conv = "converged " + rep.Converged.String() + " after the last event"
	}
	fmt.Fprintf(&b, "%s: %v simulated in %v; %d nodes, %d groups; %s\n", rep.Scenario, rep.Simulated, rep.Wall.Round(time.Millisecond),
		rep.Nodes, rep.Groups, conv)
	m := rep.Moves
	fmt.Fprintf(&b, "  moves: %d replica, %d hash slot, %d split, %d merge, %d preferred leader; %d undone; %d tasks failed\n",
		m.Replica, m.Slot, m.Split, m.Merge, m.Leader, m.Undone, m.Failed)
	fmt.Fprintf(&b, "  at the end: replica skew %d, leader skew %d, group load %.2f× the mean; groups that lost a quorum %d, leaderless at once at most %d\n",
		rep.ReplicaSkew, rep.LeaderSkew, rep.GroupLoadSkew, rep.QuorumLost, rep.MaxLeaderless)
	fmt.Fprintf(&b, "  controller leader: round p50 %v max %v; balancer plan p50 %v max %v, %d KB allocated (p50); state %d KB at most, largest command %d B\n",
		rep.RoundP50.Round(time.Microsecond), rep.RoundMax.Round(time.Microsecond), rep.PlanP50.Round(time.Microsecond),
		rep.PlanMax.Round(time.Microsecond), rep.PlanAllocP50>>10, rep.MaxStateBytes>>10, rep.MaxCommandBytes)
	for _, f := range rep.Failed {
		fmt.Fprintf(&b, "  FAILED %s\n", f)
	}
	return b.String()
}

func quantile[T time.Duration | uint64](v []T, q float64) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func spread(v []int) int {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v) - slices.Min(v)
}
