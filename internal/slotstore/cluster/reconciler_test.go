package cluster

import (
	"testing"
	"time"

	"slotmeta/internal/slotstore"
)

// healthyView: group 1 on nodes 1–3, node 1 leads, node 2 is preferred and
// caught up, everyone reported a moment ago.
func healthyView(now time.Time) slotstore.GroupView {
	return slotstore.GroupView{
		ID: 1, PreferredLeader: 2, PreferredSetAtMs: now.Add(-time.Minute).UnixMilli(),
		DesiredPeers: []slotstore.DesiredPeer{{Node: 1, ReplicaID: 1}, {Node: 2, ReplicaID: 2}, {Node: 3, ReplicaID: 3}},
		Leader:       1, Term: 4, ObservedBy: 1, Voters: []slotstore.NodeID{1, 2, 3}, Learners: []slotstore.NodeID{},
		Replicas: []slotstore.ReplicaView{
			{Node: 1, ReplicaID: 1, Role: slotstore.RoleVoter, AppliedIndex: 100, ReportAgeMs: 100},
			{Node: 2, ReplicaID: 2, Role: slotstore.RoleVoter, AppliedIndex: 99, Lag: 1, ReportAgeMs: 100},
			{Node: 3, ReplicaID: 3, Role: slotstore.RoleVoter, AppliedIndex: 100, ReportAgeMs: 100},
		},
	}
}

func TestDecidePreferred(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p := LeadershipPolicy{}
	p.ensureDefaults()
	cases := []struct {
		name     string
		edit     func(*slotstore.GroupView)
		inFlight bool
		kind     string
		reason   string
	}{
		{"all checks pass", func(*slotstore.GroupView) {}, false, DecisionTransfer, "preferred_leader"},
		{"stale intent", func(v *slotstore.GroupView) { v.PreferredSetAtMs = now.Add(-25 * time.Hour).UnixMilli() }, false, DecisionSkip, ReasonStaleIntent},
		{"voters differ from desired peers", func(v *slotstore.GroupView) { v.Voters = []slotstore.NodeID{1, 2, 4} }, false, DecisionSkip, ReasonVoterMismatch},
		{"a learner is in the membership", func(v *slotstore.GroupView) { v.Learners = []slotstore.NodeID{4} }, false, DecisionSkip, ReasonConfigChangePending},
		{"target has not reported lately", func(v *slotstore.GroupView) { v.Replicas[1].ReportAgeMs = 6000 }, false, DecisionSkip, ReasonTargetInactive},
		{"target never reported", func(v *slotstore.GroupView) { v.Replicas[1].ReportAgeMs = -1 }, false, DecisionSkip, ReasonTargetInactive},
		{"target is lagging", func(v *slotstore.GroupView) { v.Replicas[1].Lag = 65 }, false, DecisionSkip, ReasonTargetLagging},
		{"a transfer is in flight", func(*slotstore.GroupView) {}, true, DecisionSkip, ReasonTransferInFlight},
		{"no live leader", func(v *slotstore.GroupView) { v.Leader = 0 }, false, DecisionSkip, ReasonNoLeader},
		{"nothing observed yet", func(v *slotstore.GroupView) { v.ObservedBy, v.Leader = 0, 0 }, false, DecisionSkip, ReasonNoObservation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := healthyView(now)
			tc.edit(&v)
			d := decidePreferred(v, now, p, tc.inFlight)
			if d == nil || d.Kind != tc.kind || d.Reason != tc.reason {
				t.Fatalf("got %+v, want %s/%s", d, tc.kind, tc.reason)
			}
			if d.PreferredLeader != 2 || d.Group != 1 || d.Leader != v.Leader {
				t.Fatalf("decision lacks its inputs: %+v", d)
			}
		})
	}
	// Converged, or no preference: nothing to decide.
	v := healthyView(now)
	v.Leader = 2
	if d := decidePreferred(v, now, p, false); d != nil {
		t.Fatalf("preferred node already leads: %+v", d)
	}
	v = healthyView(now)
	v.PreferredLeader = 0
	if d := decidePreferred(v, now, p, false); d != nil {
		t.Fatalf("no preference: %+v", d)
	}
}

func TestCheckTransferListsEveryBlocker(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p := LeadershipPolicy{}
	p.ensureDefaults()
	v := healthyView(now)
	if pf := checkTransfer(v, 3, p, false); !pf.OK || len(pf.Blockers) != 0 {
		t.Fatalf("a safe transfer was blocked: %+v", pf)
	}
	if pf := checkTransfer(v, 1, p, false); pf.OK || !hasBlocker(pf, ReasonAlreadyLeader) {
		t.Fatalf("transfer to the leader itself: %+v", pf)
	}
	if pf := checkTransfer(v, 9, p, false); pf.OK || !hasBlocker(pf, ReasonTargetNotPeer) || !hasBlocker(pf, ReasonTargetNotVoter) {
		t.Fatalf("transfer to a stranger: %+v", pf)
	}
	v.Replicas[2].Lag, v.Replicas[2].ReportAgeMs = 1000, 60_000
	v.Learners = []slotstore.NodeID{4}
	pf := checkTransfer(v, 3, p, true)
	for _, r := range []string{ReasonTargetLagging, ReasonTargetInactive, ReasonConfigChangePending, ReasonTransferInFlight} {
		if !hasBlocker(pf, r) {
			t.Fatalf("missing blocker %s in %+v", r, pf.Blockers)
		}
	}
	if pf.TargetLag != 1000 || pf.TargetReportAge != 60_000 {
		t.Fatalf("preflight lacks the target's numbers: %+v", pf)
	}
}
