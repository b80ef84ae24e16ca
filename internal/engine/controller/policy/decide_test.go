package policy

import (
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// healthyView: group 1 on nodes 1–3, node 1 leads, node 2 is preferred and
// caught up, everyone reported a moment ago.
func healthyView(now time.Time) slotstore.GroupView {
	return slotstore.GroupView{
		ID: 1, PreferredLeader: 2, PreferredSetAtMs: now.Add(-time.Minute).UnixMilli(),
		DesiredPeers: []slotstore.DesiredPeer{{Node: 1, ReplicaID: 1}, {Node: 2, ReplicaID: 2}, {Node: 3, ReplicaID: 3}},
		Leader:       1, Term: 4, ObservedBy: 1, Voters: []slotstore.NodeID{1, 2, 3}, Learners: []slotstore.NodeID{},
		ObservationAgeMs: 100,
		Replicas: []slotstore.ReplicaView{
			{Node: 1, ReplicaID: 1, Role: slotstore.RoleVoter, AppliedIndex: 100, ReportAgeMs: 100, HeardAgoMs: 0, Live: true},
			{Node: 2, ReplicaID: 2, Role: slotstore.RoleVoter, AppliedIndex: 99, Lag: 1, ReportAgeMs: 100, HeardAgoMs: 140, Live: true},
			{Node: 3, ReplicaID: 3, Role: slotstore.RoleVoter, AppliedIndex: 100, ReportAgeMs: 100, HeardAgoMs: 130, Live: true},
		},
	}
}

// facts at now with nothing in flight, no back-off, and the target never
// seen unreachable.
func facts(now time.Time) Facts { return Facts{Now: now} }

func TestDecidePreferred(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p := Leadership{}
	p.EnsureDefaults()
	cases := []struct {
		name   string
		edit   func(*slotstore.GroupView)
		fact   func(*Facts)
		kind   slotstore.DecisionKind
		reason slotstore.Reason
	}{
		{"all checks pass", nil, nil, slotstore.DecisionTransfer, "preferred_leader"},
		{"stale intent", func(v *slotstore.GroupView) { v.PreferredSetAtMs = now.Add(-25 * time.Hour).UnixMilli() }, nil, slotstore.DecisionSkip, ReasonStaleIntent},
		{"voters differ from desired peers", func(v *slotstore.GroupView) { v.Voters = []slotstore.NodeID{1, 2, 4} }, nil, slotstore.DecisionSkip, ReasonVoterMismatch},
		{"a learner is in the membership", func(v *slotstore.GroupView) { v.Learners = []slotstore.NodeID{4} }, nil, slotstore.DecisionSkip, ReasonConfigChangePending},
		{"target has not reported lately", func(v *slotstore.GroupView) { v.Replicas[1].ReportAgeMs = 6000 }, nil, slotstore.DecisionSkip, ReasonTargetInactive},
		{"target never reported", func(v *slotstore.GroupView) { v.Replicas[1].ReportAgeMs = -1 }, nil, slotstore.DecisionSkip, ReasonTargetInactive},
		{"target is lagging", func(v *slotstore.GroupView) { v.Replicas[1].Lag = 65 }, nil, slotstore.DecisionSkip, ReasonTargetLagging},
		{"a transfer is in flight", nil, func(f *Facts) { f.InFlight = true }, slotstore.DecisionSkip, ReasonTransferInFlight},
		{"no live leader", func(v *slotstore.GroupView) { v.Leader = 0 }, nil, slotstore.DecisionSkip, ReasonNoLeader},
		{"nothing observed yet", func(v *slotstore.GroupView) { v.ObservedBy, v.Leader = 0, 0 }, nil, slotstore.DecisionSkip, ReasonNoObservation},
		// The case of the issue: the cut-off node reported 2 s ago (under the
		// report limit), but it has answered none of the leader's requests since.
		{"the target does not answer the leader", func(v *slotstore.GroupView) {
			v.Replicas[1].ReportAgeMs, v.Replicas[1].HeardAgoMs, v.Replicas[1].UnansweredMs = 1999, 1900, 1880
		}, nil, slotstore.DecisionSkip, ReasonTargetUnreachable},
		// A quiesced group: silence, but nothing asked.
		{"a quiesced group's target", func(v *slotstore.GroupView) { v.Replicas[1].HeardAgoMs = 60_000 }, nil, slotstore.DecisionTransfer, "preferred_leader"},
		{"the leader never heard the target", func(v *slotstore.GroupView) { v.Replicas[1].HeardAgoMs = -1 }, nil, slotstore.DecisionSkip, ReasonTargetUnreachable},
		{"the target's node is unreachable", nil, func(f *Facts) { f.TargetDown, f.TargetGap = true, true }, slotstore.DecisionSkip, ReasonTargetUnreachable},
		{"the target lost its leadership 10 s ago", func(v *slotstore.GroupView) {
			v.Replicas[1].Disruption, v.Replicas[1].DisruptedAgoMs = slotstore.DisruptionLostLeadership, 10_000
		}, nil, slotstore.DecisionSkip, ReasonTargetHeldDown},
		{"the target restarted 29 s ago", func(v *slotstore.GroupView) {
			v.Replicas[1].Disruption, v.Replicas[1].DisruptedAgoMs = slotstore.DisruptionRestarted, 29_000
		}, nil, slotstore.DecisionSkip, ReasonTargetHeldDown},
		{"the target came back 5 s ago", nil, func(f *Facts) { f.TargetGap, f.TargetHealthyFor = true, 5*time.Second }, slotstore.DecisionSkip, ReasonTargetHeldDown},
		{"the group is in back-off", nil, func(f *Facts) { f.Backoff = BackoffState{Failures: 2, Until: now.Add(time.Second)} }, slotstore.DecisionSkip, ReasonTransferBackoff},
		// Past each limit, nothing holds it back.
		{"the target lost its leadership 31 s ago", func(v *slotstore.GroupView) {
			v.Replicas[1].Disruption, v.Replicas[1].DisruptedAgoMs = slotstore.DisruptionNoLeader, 31_000
		}, nil, slotstore.DecisionTransfer, "preferred_leader"},
		{"the target came back 31 s ago", nil, func(f *Facts) { f.TargetGap, f.TargetHealthyFor = true, 31*time.Second }, slotstore.DecisionTransfer, "preferred_leader"},
		{"back-off over", nil, func(f *Facts) { f.Backoff = BackoffState{Failures: 2, Until: now} }, slotstore.DecisionTransfer, "preferred_leader"},
		{"heard within the limit after an old leader report", func(v *slotstore.GroupView) {
			v.ObservationAgeMs, v.Replicas[1].HeardAgoMs = 900, 1300
		}, nil, slotstore.DecisionTransfer, "preferred_leader"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := healthyView(now)
			if tc.edit != nil {
				tc.edit(&v)
			}
			f := facts(now)
			if tc.fact != nil {
				tc.fact(&f)
			}
			d := DecidePreferred(v, p, f)
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
	if d := DecidePreferred(v, p, facts(now)); d != nil {
		t.Fatalf("preferred node already leads: %+v", d)
	}
	v = healthyView(now)
	v.PreferredLeader = 0
	if d := DecidePreferred(v, p, facts(now)); d != nil {
		t.Fatalf("no preference: %+v", d)
	}
}

func TestCheckTransferListsEveryBlocker(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p := Leadership{}
	p.EnsureDefaults()
	v := healthyView(now)
	if pf := CheckTransfer(v, 3, p, facts(now)); !pf.OK || len(pf.Blockers) != 0 {
		t.Fatalf("a safe transfer was blocked: %+v", pf)
	}
	if pf := CheckTransfer(v, 1, p, facts(now)); pf.OK || !HasBlocker(pf, ReasonAlreadyLeader) {
		t.Fatalf("transfer to the leader itself: %+v", pf)
	}
	if pf := CheckTransfer(v, 9, p, facts(now)); pf.OK || !HasBlocker(pf, ReasonTargetNotPeer) || !HasBlocker(pf, ReasonTargetNotVoter) {
		t.Fatalf("transfer to a stranger: %+v", pf)
	}
	v.Replicas[2].Lag, v.Replicas[2].ReportAgeMs = 1000, 60_000
	v.Learners = []slotstore.NodeID{4}
	v.Replicas[2].HeardAgoMs, v.Replicas[2].UnansweredMs = 5000, 4990
	v.Replicas[2].Disruption, v.Replicas[2].DisruptedAgoMs = slotstore.DisruptionRestarted, 100
	f := facts(now)
	f.InFlight, f.Backoff = true, BackoffState{Failures: 1, Until: now.Add(time.Minute)}
	pf := CheckTransfer(v, 3, p, f)
	for _, r := range []slotstore.Reason{ReasonTargetLagging, ReasonTargetInactive, ReasonConfigChangePending, ReasonTransferInFlight,
		ReasonTargetUnreachable, ReasonTargetHeldDown, ReasonTransferBackoff} {
		if !HasBlocker(pf, r) {
			t.Fatalf("missing blocker %s in %+v", r, pf.Blockers)
		}
	}
	if pf.TargetLag != 1000 || pf.TargetReportAge != 60_000 {
		t.Fatalf("preflight lacks the target's numbers: %+v", pf)
	}
}
