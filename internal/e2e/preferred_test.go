package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// fakeClock is the injectable clock of a test cluster.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }
func newFakeClock() *fakeClock               { c := &fakeClock{}; c.ms.Store(time.Now().UnixMilli()); return c }
func ctx10s() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func controllerLeader(t *testing.T, c *slotstoretest.Cluster) *cluster.Node {
	t.Helper()
	var leader *cluster.Node
	testutil.WaitUntil(t, 10*time.Second, 10*time.Millisecond, "a controller leader", func() bool {
		id := c.Nodes[0].ControllerLeader()
		for _, n := range c.Nodes {
			if n.NodeID() == id && n.ControllerLeader() == id {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

func lastDecision(n *cluster.Node, g slotstore.GroupID) slotstore.Decision {
	ds := n.Operator().Decisions()
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].Group == g {
			return ds[i]
		}
	}
	return slotstore.Decision{}
}

// TestPreferredLeaderReconciliation drives the reconciler with a fake clock:
// a refused round records its reason and moves nothing; a round whose checks
// all pass moves the leader to the preferred node and says so.
func TestPreferredLeaderReconciliation(t *testing.T) {
	clock := newFakeClock()
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Tune: func(cfg *cluster.Config) {
		cfg.Now = clock.now
		cfg.ObserveInterval = -1 // the test drives observation and reconciliation
	}})
	ctl := controllerLeader(t, c)
	const g = slotstore.GroupID(1)
	ctx, cancel := ctx10s()
	defer cancel()
	round := func() {
		t.Helper()
		octx, ocancel := context.WithTimeout(context.Background(), 2*time.Second)
		ctl.Testing().Leader().ObserveOnce(octx)
		ocancel()
		ctl.Testing().Leader().ReconcileOnce(clock.now())
	}
	view := func() slotstore.GroupView {
		t.Helper()
		v, err := ctl.Operator().Group(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Let the bootstrap's preferred leader settle first: rounds until the
	// observed leader is the preferred one.
	var v slotstore.GroupView
	for i := 0; ; i++ {
		round()
		v = view()
		if v.Leader != 0 && v.Leader == v.PreferredLeader && len(v.Voters) == 3 && v.ObservedBy != 0 {
			break
		}
		if i == 50 {
			t.Fatalf("group 1 never settled on its preferred leader: %+v", v)
		}
	}
	// Prefer a node that does not lead.
	target := slotstore.NodeID(v.Leader%3 + 1)
	if err := ctl.Operator().SetPreferredLeader(ctx, g, target); err != nil {
		t.Fatal(err)
	}

	// 1. The intent goes stale: skip, leader unchanged, reason logged.
	clock.advance(25 * time.Hour)
	round()
	if d := lastDecision(ctl, g); d.Kind != slotstore.DecisionSkip || d.Reason != policy.ReasonStaleIntent {
		t.Fatalf("stale intent: last decision %+v", d)
	}
	if view().Leader != v.Leader {
		t.Fatal("a stale intent moved the leader")
	}

	// 2. A fresh intent with every check passing: the leader moves.
	if err := ctl.Operator().SetPreferredLeader(ctx, g, target); err != nil {
		t.Fatal(err)
	}
	round()
	if d := lastDecision(ctl, g); d.Kind != slotstore.DecisionTransferred || d.Leader != target {
		t.Fatalf("after a passing round: last decision %+v (log %+v)", d, ctl.Operator().Decisions())
	}
	round()
	if v2 := view(); v2.Leader != target {
		t.Fatalf("leader is %d, preferred %d", v2.Leader, target)
	}

	// 3. Prefer a node that stops reporting: skip as inactive, no transfer.
	other := slotstore.NodeID(target%3 + 1)
	if other == ctl.NodeID() {
		other = slotstore.NodeID(other%3 + 1)
	}
	if other == target {
		t.Fatal("test set-up: no third node")
	}
	if err := ctl.Operator().SetPreferredLeader(ctx, g, other); err != nil {
		t.Fatal(err)
	}
	_ = c.Nodes[other-1].Close()
	clock.advance(6 * time.Second)
	round()
	if d := lastDecision(ctl, g); d.Kind != slotstore.DecisionSkip || d.Reason != policy.ReasonTargetInactive {
		t.Fatalf("inactive target: last decision %+v", d)
	}
	if l := view().Leader; l != target {
		t.Fatalf("leader moved to %d while the preferred node was inactive", l)
	}
}
