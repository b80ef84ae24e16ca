package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestGroupsAndLeaderTransferAPI: the groups view shows intent and observed
// fact side by side; the preflight says why a transfer is unsafe; a safe
// transfer answers once the new leader is observed; an unsafe one is a 409
// whose details name the blockers.
func TestGroupsAndLeaderTransferAPI(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
	}})
	servers := make([]*server, 3)
	for i, n := range c.Nodes {
		servers[i] = serve(t, n)
	}
	s := servers[0]
	var groups client.GroupList
	// The first view may predate the first status round: wait for facts,
	// and for the leaders to sit at their preferred nodes (until then the
	// reconciler may be moving one, and a preflight sees that transfer).
	testutil.WaitFor(t, 10*time.Second, 50*time.Millisecond, func() (bool, string) {
		groups = client.GroupList{}
		s.must(200, "GET", "/v1/cluster/groups", "").json(&groups)
		return len(groups.Items) == 2 && groups.Items[0].Leader != 0 && groups.Items[1].Leader != 0 &&
				len(groups.Items[0].Voters) == 3 && len(deref(groups.Items[0].Replicas)) == 3 &&
				groups.Items[0].Leader == groups.Items[0].PreferredLeader && groups.Items[1].Leader == groups.Items[1].PreferredLeader,
			"groups never showed observed leaders and voters: " + js(groups.Items)
	})
	g1 := groups.Items[0]
	if g1.Id != 1 || len(deref(g1.DesiredPeers)) != 3 || g1.ConfigEpoch != 1 || g1.PreferredLeader == 0 || g1.ObservedBy == 0 ||
		g1.Aggregator == 0 || g1.HashSlots != 128 {
		t.Fatalf("group 1 view: %s", js(g1))
	}
	for _, r := range deref(g1.Replicas) {
		if r.Role != client.ReplicaViewRoleVoter || !r.Desired || r.ReportAgeMs < 0 {
			t.Fatalf("replica view: %+v", r)
		}
	}
	// Any node answers with the controller leader's aggregate.
	var fromOther client.GroupView
	servers[2].must(200, "GET", "/v1/cluster/groups/1", "").json(&fromOther)
	if fromOther.Id != 1 || fromOther.Leader == 0 {
		t.Fatalf("group 1 through node 3: %s", js(fromOther))
	}
	s.must(404, "GET", "/v1/cluster/groups/9", "")
	s.must(400, "GET", "/v1/cluster/groups/x", "")

	leader := g1.Leader
	target := leader%3 + 1
	var pf client.Preflight
	s.must(200, "GET", fmt.Sprintf("/v1/cluster/groups/1/leader-transfer/preflight?target_node=%d", leader), "").json(&pf)
	if pf.Ok || len(pf.Blockers) == 0 || pf.Blockers[0].Reason != string(policy.ReasonAlreadyLeader) {
		t.Fatalf("preflight to the leader itself: %+v", pf)
	}
	// A transfer the reconciler made at start-up stays "in flight" until the
	// controller observes it done: the preflight says so until then.
	testutil.WaitFor(t, 10*time.Second, 50*time.Millisecond, func() (bool, string) {
		pf = client.Preflight{}
		s.must(200, "GET", fmt.Sprintf("/v1/cluster/groups/1/leader-transfer/preflight?target_node=%d", target), "").json(&pf)
		inFlight := !pf.Ok && len(pf.Blockers) == 1 && pf.Blockers[0].Reason == string(policy.ReasonTransferInFlight)
		if !inFlight && (!pf.Ok || pf.Leader != leader) {
			t.Fatalf("preflight to a caught-up voter: %+v", pf)
		}
		return !inFlight, fmt.Sprintf("the start-up transfer still in flight: %+v", pf)
	})
	// The transfer itself, asked of a node that may not lead the controller.
	var res client.TransferResult
	servers[2].must(200, "POST", "/v1/cluster/groups/1/leader-transfer", fmt.Sprintf(`{"target_node":%d}`, target)).json(&res)
	if res.Leader != target || res.PreviousLeader != leader || res.ObservedAtMs == 0 {
		t.Fatalf("transfer result: %+v", res)
	}
	if r := s.do("POST", "/v1/cluster/groups/1/leader-transfer", `{"target_node":7}`); r.code != 409 || r.errCode() != "conflict" ||
		!strings.Contains(string(r.body), string(policy.ReasonTargetNotPeer)) {
		t.Fatalf("transfer to a stranger: %d %s", r.code, r.body)
	}
	s.must(400, "POST", "/v1/cluster/groups/1/leader-transfer", `{"target_node":0}`)

	// Preferred leader intent.
	var v client.GroupView
	s.must(200, "PUT", "/v1/cluster/groups/2/preferred-leader", fmt.Sprintf(`{"node":%d}`, 3)).json(&v)
	if v.PreferredLeader != 3 || v.PreferredSetAtMs == 0 {
		t.Fatalf("preferred leader: %s", js(v))
	}
	if r := s.do("PUT", "/v1/cluster/groups/2/preferred-leader", `{"node":9}`); r.code != 409 {
		t.Fatalf("preferring a stranger: %d %s", r.code, r.body)
	}
	// The reconciler runs every 100ms here: group 2 converges on node 3 and
	// the decision log says so.
	testutil.WaitFor(t, 10*time.Second, 50*time.Millisecond, func() (bool, string) {
		var ds client.DecisionList
		s.must(200, "GET", "/v1/cluster/decisions", "").json(&ds)
		done := false
		for _, d := range ds.Items {
			if d.Group == 2 && d.Kind == client.DecisionKindTransferred && d.Leader == 3 {
				done = true
			}
		}
		var g2 client.GroupView
		s.must(200, "GET", "/v1/cluster/groups/2", "").json(&g2)
		return done && g2.Leader == 3, fmt.Sprintf("group 2 did not converge on its preferred leader: %s, decisions %s", js(g2), js(ds.Items))
	})
}
