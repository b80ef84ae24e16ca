package e2e

import (
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestThreeNodesWriteAnywhereReadEverywhere: a write through each node is
// read back linearizably through every other node.
func TestThreeNodesWriteAnywhereReadEverywhere(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 4})
	servers := make([]*server, len(c.Nodes))
	for i, n := range c.Nodes {
		servers[i] = serve(t, n)
	}
	for i, s := range servers {
		for k := 0; k < 8; k++ {
			s.eventually(200, "PUT", fmt.Sprintf("/v1/kv/n%d-k%d", i, k), fmt.Sprintf(`{"value":"v%d-%d"}`, i, k))
		}
	}
	for i := range servers {
		for j, s := range servers {
			for k := 0; k < 8; k++ {
				var kv client.KV
				r := s.eventually(200, "GET", fmt.Sprintf("/v1/kv/n%d-k%d", i, k), "")
				r.json(&kv)
				if kv.Value != fmt.Sprintf("v%d-%d", i, k) {
					t.Fatalf("node %d reads %q for node %d's write %d", j+1, kv.Value, i+1, k)
				}
				// Linearizable: served by the node asked, or — when its own
				// ReadIndex stalls on a loaded machine — by the group's leader.
				if sb := r.header.Get("X-Served-By"); sb == "" || sb == "0" {
					t.Fatalf("no X-Served-By asking node %d", j+1)
				}
				// A local read is served by the node asked, from its own
				// replica, and says how far that replica has applied.
				lr := s.eventually(200, "GET", fmt.Sprintf("/v1/kv/n%d-k%d?consistency=local", i, k), "")
				if lr.header.Get("X-Served-By") != fmt.Sprint(j+1) || lr.header.Get("X-Applied-Index") == "" || lr.header.Get("X-Applied-Index") == "0" {
					t.Fatalf("local read on node %d: %v", j+1, lr.header)
				}
			}
		}
	}
}
