package cluster

import (
	"testing"
	"time"

	"slotmeta/internal/slotstore"
)

// TestEveryRefusalReasonReachesTheDecisionLog drives ReconcileOnce on a real
// node (real controller group, real replicated log) with a fake clock and
// views that each break one condition: every refusal is recorded with its
// reason and no transfer is attempted; the one view that passes every check
// is recorded as a transfer.
func TestEveryRefusalReasonReachesTheDecisionLog(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	cfg := testConfig(t, t.TempDir(), freeAddr(t))
	cfg.ObserveInterval = -1
	cfg.Now = func() time.Time { return now }
	n := startNode(t, cfg)
	defer n.Close()
	for i := 0; i < 200 && !n.isControllerLeader(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	cases := map[slotstore.GroupID]struct {
		edit     func(*slotstore.GroupView)
		inFlight bool
		reason   string
	}{
		11: {func(v *slotstore.GroupView) { v.PreferredSetAtMs = now.Add(-48 * time.Hour).UnixMilli() }, false, ReasonStaleIntent},
		12: {func(v *slotstore.GroupView) { v.Voters = []slotstore.NodeID{1, 2, 4} }, false, ReasonVoterMismatch},
		13: {func(v *slotstore.GroupView) { v.Learners = []slotstore.NodeID{4} }, false, ReasonConfigChangePending},
		14: {func(v *slotstore.GroupView) { v.Replicas[1].ReportAgeMs = 60_000 }, false, ReasonTargetInactive},
		15: {func(v *slotstore.GroupView) { v.Replicas[1].Lag = 10_000 }, false, ReasonTargetLagging},
		16: {func(*slotstore.GroupView) {}, true, ReasonTransferInFlight},
		17: {func(v *slotstore.GroupView) { v.Leader = 0 }, false, ReasonNoLeader},
	}
	for g, tc := range cases {
		if tc.inFlight {
			n.transfers.Store(g, now)
		}
	}
	n.viewsHook = func(time.Time) []slotstore.GroupView {
		var views []slotstore.GroupView
		for g, tc := range cases {
			v := healthyView(now)
			v.ID = g
			tc.edit(&v)
			views = append(views, v)
		}
		return views
	}
	decisions := n.ReconcileOnce(now)
	if len(decisions) != len(cases) {
		t.Fatalf("%d decisions for %d groups: %+v", len(decisions), len(cases), decisions)
	}
	logged := map[slotstore.GroupID]slotstore.Decision{}
	for _, d := range n.Decisions() {
		logged[d.Group] = d
	}
	for g, tc := range cases {
		d, ok := logged[g]
		if !ok || d.Kind != DecisionSkip || d.Reason != tc.reason {
			t.Errorf("group %d: logged %+v, want skip/%s", g, d, tc.reason)
		}
		if d.AtMs != now.UnixMilli() || d.PreferredLeader != 2 {
			t.Errorf("group %d: the decision lacks its time or inputs: %+v", g, d)
		}
	}
	// A second round with the same inputs records nothing new.
	before := len(n.Decisions())
	n.ReconcileOnce(now)
	if after := len(n.Decisions()); after != before {
		t.Fatalf("an unchanged skip was logged again: %d → %d", before, after)
	}
}
