package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestAKilledLeadersLastReportBlocksTransfersToIt goes from reports to the
// transfer check: group 1's old leader (node 3, term 4) reported a moment
// before it died, fresh and caught up; node 1 leads at term 5 and has
// heard node 3 recently (while following it). The view carries each
// replica's reported term, and a transfer to node 3 is refused for its
// report of the older term, one to node 2 (reporting term 5) is not.
func TestAKilledLeadersLastReportBlocksTransfersToIt(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	st := controller.NewState()
	st.Groups[1] = &controller.Group{ID: 1, Peers: map[slotstore.NodeID]uint64{1: 1, 2: 2, 3: 3}, PreferredLeader: 3,
		PreferredSetAtMs: now.Add(-time.Minute).UnixMilli()}
	voters := map[uint64]string{1: "n1", 2: "n2", 3: "n3"}
	o := NewObservations()
	o.Lead(now.Add(-time.Minute))
	o.Record(3, slotstore.NodeStatus{Node: 3, Replicas: []slotstore.ReplicaStatus{{Group: 1, ReplicaID: 3, Node: 3,
		AppliedIndex: 100, LeaderReplica: 3, Term: 4, Voters: voters}}}, now.Add(-900*time.Millisecond))
	o.Record(1, slotstore.NodeStatus{Node: 1, Replicas: []slotstore.ReplicaStatus{{Group: 1, ReplicaID: 1, Node: 1,
		AppliedIndex: 100, LeaderReplica: 1, Term: 5, Voters: voters, HeardAgoMs: map[uint64]int64{2: 10, 3: 150}}}}, now.Add(-50*time.Millisecond))
	o.Record(2, slotstore.NodeStatus{Node: 2, Replicas: []slotstore.ReplicaStatus{{Group: 1, ReplicaID: 2, Node: 2,
		AppliedIndex: 100, LeaderReplica: 1, Term: 5}}}, now.Add(-50*time.Millisecond))
	views := o.Aggregate(st, now, 1, 3*time.Second)
	if len(views) != 1 || views[0].Leader != 1 || views[0].Term != 5 {
		t.Fatalf("views %+v, want group 1 led by node 1 at term 5", views)
	}
	terms := map[slotstore.NodeID]uint64{}
	for _, r := range views[0].Replicas {
		terms[r.Node] = r.Term
	}
	if terms[1] != 5 || terms[2] != 5 || terms[3] != 4 {
		t.Fatalf("reported terms in the view: %v, want node 3 at 4, the others at 5", terms)
	}
	p := Leadership{}
	p.EnsureDefaults()
	pf := CheckTransfer(views[0], 3, p, Facts{Now: now})
	if pf.OK || !hasDetail(pf, ReasonTargetInactive, "last reported term 4, the group is at term 5") {
		t.Fatalf("a transfer to the old leader: %+v", pf)
	}
	if pf := CheckTransfer(views[0], 2, p, Facts{Now: now}); hasDetail(pf, ReasonTargetInactive, "term") {
		t.Fatalf("a transfer to a node of the current term refused for its term: %+v", pf)
	}
}

func hasDetail(pf Preflight, reason slotstore.Reason, detail string) bool {
	for _, b := range pf.Blockers {
		if b.Reason == reason && strings.Contains(b.Detail, detail) {
			return true
		}
	}
	return false
}

// TestAStaleLeaderReportNamesNoLeader: group 1's leader (node 3) stopped
// reporting 10 s ago, the unreachable limit is 3 s, and its followers
// report no leader (campaigning without a quorum): the view shows no
// leader — not node 3 from its last word — and the group as leaderless.
// While node 3's report is fresh, it leads.
func TestAStaleLeaderReportNamesNoLeader(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	st := controller.NewState()
	st.Groups[1] = &controller.Group{ID: 1, Peers: map[slotstore.NodeID]uint64{1: 1, 2: 2, 3: 3}}
	voters := map[uint64]string{1: "n1", 2: "n2", 3: "n3"}
	o := NewObservations()
	o.Lead(now.Add(-time.Minute))
	leaderReport := func(at time.Time) {
		o.Record(3, slotstore.NodeStatus{Node: 3, Replicas: []slotstore.ReplicaStatus{{Group: 1, ReplicaID: 3, Node: 3,
			AppliedIndex: 100, LeaderReplica: 3, Term: 4, Voters: voters}}}, at)
	}
	leaderReport(now.Add(-10 * time.Second))
	for _, n := range []slotstore.NodeID{1, 2} {
		o.Record(n, slotstore.NodeStatus{Node: n, Replicas: []slotstore.ReplicaStatus{{Group: 1, ReplicaID: uint64(n), Node: n,
			AppliedIndex: 100, Term: 6}}}, now.Add(-50*time.Millisecond))
	}
	views := o.Aggregate(st, now, 1, 3*time.Second)
	if len(views) != 1 || views[0].Leader != 0 || views[0].Health != slotstore.GroupNoLeader {
		t.Fatalf("a leader that stopped reporting: %+v", views)
	}
	leaderReport(now.Add(-100 * time.Millisecond))
	if views := o.Aggregate(st, now, 1, 3*time.Second); views[0].Leader != 3 {
		t.Fatalf("a leader reporting: %+v", views[0])
	}
}
