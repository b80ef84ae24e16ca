package e2e

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller/balance"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// balancerOf reads GET /v1/cluster/balancer.
func balancerOf(s *server) slotstore.BalancerStatus {
	var st slotstore.BalancerStatus
	s.must(200, "GET", "/v1/cluster/balancer", "").json(&st)
	return st
}

func loadOf(st slotstore.BalancerStatus, node slotstore.NodeID) (slotstore.NodeLoad, bool) {
	for _, l := range st.Load {
		if l.Node == node {
			return l, true
		}
	}
	return slotstore.NodeLoad{}, false
}

// TestBalancerDrainAndRemove: on a real cluster of three nodes and two
// groups, a fourth node joins and the balancer (on, every 200 ms) moves a
// replica to it, logging why; the plan is then empty and says what is
// balanced; the balancer pauses and resumes. Draining the new node moves its
// replicas off with its progress reported; a node that holds replicas cannot
// be removed, the drained one can, writes go on throughout, and the removed
// node refuses to start again on its old data, saying why.
func TestBalancerDrainAndRemove(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.DisableBalancer = false
		cfg.BalanceInterval = 200 * time.Millisecond
		cfg.Balancer = balance.Config{GroupsPerNode: -1} // this test is about replicas, not group counts
	}})
	s1 := serve(t, c.Nodes[0])
	u, _ := url.Parse(s1.url)
	n4 := c.Join(u.Host)
	s4 := serve(t, n4)
	for i := 0; i < 20; i++ {
		s1.eventually(200, "PUT", fmt.Sprintf("/v1/kv/e%d", i), fmt.Sprintf(`{"value":"%d"}`, i))
	}

	testutil.WaitUntil(t, 30*time.Second, 50*time.Millisecond, "the balancer moves a replica to node 4", func() bool {
		l, ok := loadOf(balancerOf(s1), 4)
		return ok && l.Replicas >= 1
	})
	var decisions struct {
		Items []slotstore.Decision `json:"items"`
	}
	testutil.WaitUntil(t, 10*time.Second, 50*time.Millisecond, "the move is in the decision log", func() bool {
		s1.must(200, "GET", "/v1/cluster/decisions", "").json(&decisions)
		for _, d := range decisions.Items {
			if d.Kind == slotstore.DecisionBalance && d.Reason == balance.ReasonCount && strings.Contains(d.Detail, "to node 4") {
				return true
			}
		}
		return false
	})
	testutil.WaitUntil(t, 30*time.Second, 50*time.Millisecond, "the plan is empty once the move is done", func() bool {
		var p slotstore.BalancePlan
		s1.must(200, "GET", "/v1/cluster/balancer/plan", "").json(&p)
		return len(p.Actions) == 0 && strings.Contains(strings.Join(p.Balanced, " "), "replica_count")
	})

	// Pause and resume; a body without the field is the caller's mistake.
	var st slotstore.BalancerStatus
	s1.must(200, "PUT", "/v1/cluster/balancer", `{"paused":true}`).json(&st)
	if !st.Paused || !st.Enabled {
		t.Fatalf("after pause: %+v", st)
	}
	s1.must(400, "PUT", "/v1/cluster/balancer", `{}`)
	s1.must(200, "PUT", "/v1/cluster/balancer", `{"paused":false}`)

	// Drain node 4; node 1, which holds replicas and is not drained, cannot
	// be removed.
	var info slotstore.NodeInfo
	s1.must(202, "POST", "/v1/cluster/nodes/4/drain", "").json(&info)
	if info.State != slotstore.NodeDraining || info.DrainReplicas < 1 {
		t.Fatalf("drain answer: %+v", info)
	}
	if r := s1.do("DELETE", "/v1/cluster/nodes/1", ""); r.code != 412 {
		t.Fatalf("removing a node with replicas: %d %s", r.code, r.body)
	}
	s1.must(404, "POST", "/v1/cluster/nodes/9/drain", "")
	s1.must(400, "POST", "/v1/cluster/nodes/x/drain", "")
	testutil.WaitUntil(t, 60*time.Second, 50*time.Millisecond, "node 4 drained", func() bool {
		for _, d := range balancerOf(s1).Drains {
			if d.Node == 4 {
				return d.Done && d.ReplicasLeft == 0 && d.Percent == 100
			}
		}
		return false
	})
	for i := 0; i < 20; i++ {
		s1.eventually(200, "PUT", fmt.Sprintf("/v1/kv/e%d", i), fmt.Sprintf(`{"value":"again %d"}`, i))
	}
	s4.must(412, "DELETE", "/v1/cluster/nodes/4", "") // a node does not remove itself
	s1.must(204, "DELETE", "/v1/cluster/nodes/4", "")
	s1.must(204, "DELETE", "/v1/cluster/nodes/4", "") // removing again changes nothing
	var nodes struct {
		Items []slotstore.NodeInfo `json:"items"`
	}
	s1.must(200, "GET", "/v1/cluster/nodes", "").json(&nodes)
	if len(nodes.Items) != 4 || nodes.Items[3].State != slotstore.NodeRemoved {
		t.Fatalf("nodes after the removal: %+v", nodes.Items)
	}
	for i := 0; i < 20; i++ {
		r := s1.eventually(200, "GET", fmt.Sprintf("/v1/kv/e%d", i), "")
		if !strings.Contains(string(r.body), fmt.Sprintf("again %d", i)) {
			t.Fatalf("e%d after the drain: %s", i, r.body)
		}
	}

	// The removed node, started again on its data, is refused and says why.
	c.StopNode(3)
	if n, err := c.TryStartNode(3); !errors.Is(err, cluster.ErrRemoved) {
		if n != nil {
			_ = n.Close()
		}
		t.Fatalf("restarting the removed node: %v", err)
	} else if !strings.Contains(err.Error(), "says so") && !strings.Contains(err.Error(), "refuses this node's requests") ||
		!strings.Contains(err.Error(), "remove its data directory") {
		// Its own controller replica applied the removal, or the other
		// nodes refuse its peer requests: either way it says why.
		t.Fatalf("refusal without a reason: %v", err)
	}
}

// TestRemoveTheControllerLeader: the node that leads the controller is
// drained and removed through another node's API; its controller
// leadership moves to another voter first, and the cluster keeps taking
// writes.
func TestRemoveTheControllerLeader(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 4, Groups: 1, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.BalanceInterval = 200 * time.Millisecond // drains run with the balancer off too
	}})
	servers := make([]*server, len(c.Nodes))
	for i, n := range c.Nodes {
		servers[i] = serve(t, n)
	}
	leader := c.Nodes[0].Operator().Summary().ControllerLeader
	var via *server
	for i, n := range c.Nodes {
		if n.NodeID() != leader {
			via = servers[i]
			break
		}
	}
	via.must(202, "POST", fmt.Sprintf("/v1/cluster/nodes/%d/drain", leader), "")
	testutil.WaitUntil(t, 60*time.Second, 50*time.Millisecond, "the controller leader's node drained", func() bool {
		for _, d := range balancerOf(via).Drains {
			if d.Node == leader {
				return d.Done
			}
		}
		return false
	})
	via.must(204, "DELETE", fmt.Sprintf("/v1/cluster/nodes/%d", leader), "")
	if now := via.node.Operator().Summary().ControllerLeader; now == leader {
		t.Fatalf("node %d still leads the controller after its removal", leader)
	}
	for i := 0; i < 10; i++ {
		via.eventually(200, "PUT", fmt.Sprintf("/v1/kv/r%d", i), `{"value":"after"}`)
	}
}
