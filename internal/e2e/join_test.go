package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestFourthNodeJoins: a node started with a join address registers through
// a running node's API, becomes active, follows the controller, and serves
// reads and writes by forwarding (it holds no slot replicas yet).
func TestFourthNodeJoins(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 4})
	s1 := serve(t, c.Nodes[0])
	u, _ := url.Parse(s1.url)
	n4 := c.Join(u.Host)
	s4 := serve(t, n4)

	var nodes client.NodeList
	r := s1.must(200, "GET", "/v1/cluster/nodes", "")
	r.json(&nodes)
	if len(nodes.Items) != 4 || nodes.Items[3].Id != 4 || deref(nodes.Items[3].State) != client.NodeStateActive {
		t.Fatalf("nodes after the join: %s", r.body)
	}
	var sum client.ClusterSummary
	s4.must(200, "GET", "/v1/cluster", "").json(&sum)
	if sum.NodeId != 4 || sum.Nodes != 4 || sum.Groups != 4 || sum.GroupsWithLeader != 4 || !sum.Ready || sum.RouteRevision != 1 {
		t.Fatalf("the new node's view: %+v", sum)
	}
	// Writes through the new node are forwarded to the leaders; reads are
	// served through a peer holding a replica.
	for i := 0; i < 12; i++ {
		s4.eventually(200, "PUT", fmt.Sprintf("/v1/kv/j%d", i), fmt.Sprintf(`{"value":"%d"}`, i))
	}
	for i := 0; i < 12; i++ {
		var kv client.KV
		r := s4.eventually(200, "GET", fmt.Sprintf("/v1/kv/j%d", i), "")
		r.json(&kv)
		if kv.Value != fmt.Sprint(i) || r.header.Get("X-Served-By") == "4" {
			t.Fatalf("read through node 4: %q served by %s", kv.Value, r.header.Get("X-Served-By"))
		}
		s1.eventually(200, "GET", fmt.Sprintf("/v1/kv/j%d", i), "")
	}
	// Registering the same node again is a no-op; a clash is a conflict.
	s1.must(200, "POST", "/v1/cluster/nodes", fmt.Sprintf(`{"id":4,"raft_addr":%q}`, nodes.Items[3].RaftAddr))
	if r := s1.do("POST", "/v1/cluster/nodes", `{"id":4,"raft_addr":"127.0.0.1:1"}`); r.code != 409 {
		t.Fatalf("clashing registration: %d %s", r.code, r.body)
	}
	// The joined node restarts as a non-voting controller follower.
	n4 = c.Restart(3)
	if err := n4.Ready(); err != nil {
		t.Fatal(err)
	}
}

// TestJoinThroughAnAPIWithTokens: when the cluster's API requires tokens, a
// node joins with an admin token and is refused without one (or with a
// lesser role) — at once, not after a minute of retries.
func TestJoinThroughAnAPIWithTokens(t *testing.T) {
	const admin, writer = "join-admin-token", "join-write-token"
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2,
		Tune: func(cfg *cluster.Config) { cfg.JoinToken = admin }})
	authn, err := auth.New(map[string]auth.Role{admin: auth.RoleAdmin, writer: auth.RoleWrite})
	if err != nil {
		t.Fatal(err)
	}
	ts := slotstoretest.ServeAPI(t, c.Nodes[0], func(cfg *httpapi.Config) { cfg.Auth = authn })
	u, _ := url.Parse(ts.URL)

	for _, token := range []string{"", writer} {
		cfg := cluster.Config{NodeID: 9, DataDir: t.TempDir(), RaftAddr: slotstoretest.FreeAddr(t), PeerAddr: slotstoretest.FreeAddr(t),
			APIAddr: slotstoretest.FreeAddr(t), ClusterSecret: slotstoretest.Secret, JoinAddr: u.Host, JoinToken: token,
			RTT: 20 * time.Millisecond, ElectionRTT: 10, HeartbeatRTT: 1}
		start := time.Now()
		n, err := cluster.Start(cfg)
		if err == nil {
			_ = n.Close()
			t.Fatalf("joined with token %q", token)
		}
		if !strings.Contains(err.Error(), "join refused") || time.Since(start) > 20*time.Second {
			t.Fatalf("token %q: %v after %v", token, err, time.Since(start))
		}
	}
	n4 := c.Join(u.Host) // the harness's config carries the admin token
	if err := n4.Ready(); err != nil {
		t.Fatal(err)
	}
	if got := len(c.Nodes[0].Operator().Nodes()); got != 4 {
		t.Fatalf("%d nodes registered", got)
	}
}
