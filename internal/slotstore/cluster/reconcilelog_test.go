package cluster

import (
	"testing"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller/policy"
	"slotmeta/internal/testutil"
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
	testutil.WaitUntil(t, 5*time.Second, 10*time.Millisecond, "the node leads the controller", n.isControllerLeader)
	cases := map[slotstore.GroupID]struct {
		edit     func(*slotstore.GroupView)
		inFlight bool
		reason   string
	}{
		11: {func(v *slotstore.GroupView) { v.PreferredSetAtMs = now.Add(-48 * time.Hour).UnixMilli() }, false, policy.ReasonStaleIntent},
		12: {func(v *slotstore.GroupView) { v.Voters = []slotstore.NodeID{1, 2, 4} }, false, policy.ReasonVoterMismatch},
		13: {func(v *slotstore.GroupView) { v.Learners = []slotstore.NodeID{4} }, false, policy.ReasonConfigChangePending},
		14: {func(v *slotstore.GroupView) { v.Replicas[1].ReportAgeMs = 60_000 }, false, policy.ReasonTargetInactive},
		15: {func(v *slotstore.GroupView) { v.Replicas[1].Lag = 10_000 }, false, policy.ReasonTargetLagging},
		16: {func(*slotstore.GroupView) {}, true, policy.ReasonTransferInFlight},
		17: {func(v *slotstore.GroupView) { v.Leader = 0 }, false, policy.ReasonNoLeader},
	}
	for g, tc := range cases {
		if tc.inFlight {
			n.transfers.Store(g, now)
		}
	}
	n.viewsHook = func(time.Time) []slotstore.GroupView {
		var views []slotstore.GroupView
		for g, tc := range cases {
			v := transferableView(now)
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
		if !ok || d.Kind != slotstore.DecisionSkip || d.Reason != tc.reason {
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

// transferableView: group 1 on nodes 1–3, node 1 leads, node 2 is preferred,
// caught up and heard by the leader, everyone reported a moment ago — every
// transfer check passes.
func transferableView(now time.Time) slotstore.GroupView {
	return slotstore.GroupView{
		ID: 1, PreferredLeader: 2, PreferredSetAtMs: now.Add(-time.Minute).UnixMilli(),
		DesiredPeers: []slotstore.DesiredPeer{{Node: 1, ReplicaID: 1}, {Node: 2, ReplicaID: 2}, {Node: 3, ReplicaID: 3}},
		Leader:       1, Term: 4, ObservedBy: 1, ObservationAgeMs: 100, Voters: []slotstore.NodeID{1, 2, 3}, Learners: []slotstore.NodeID{},
		Replicas: []slotstore.ReplicaView{
			{Node: 1, ReplicaID: 1, Role: slotstore.RoleVoter, AppliedIndex: 100, ReportAgeMs: 100, Live: true},
			{Node: 2, ReplicaID: 2, Role: slotstore.RoleVoter, AppliedIndex: 99, Lag: 1, ReportAgeMs: 100, HeardAgoMs: 140, Live: true},
			{Node: 3, ReplicaID: 3, Role: slotstore.RoleVoter, AppliedIndex: 100, ReportAgeMs: 100, HeardAgoMs: 130, Live: true},
		},
	}
}
