package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// keysOfGroup returns n keys with the given prefix whose hash slots group g owns.
func keysOfGroup(t *testing.T, s *server, g slotstore.GroupID, prefix string, n int) []string {
	table := s.node.Routes().Table()
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("%s-%d", prefix, i)
		if table.Group(slotstore.HashSlotOfString(k)) == g {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestForwardingUnderLeaderChange: writes sent to a follower while the
// group's leadership moves back and forth are applied once or answered with
// an explicit, retryable error; retried with the same Idempotency-Key they
// are never applied twice.
func TestForwardingUnderLeaderChange(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2})
	servers := make([]*server, 3)
	for i, n := range c.Nodes {
		servers[i] = serve(t, n)
	}
	const g = slotstore.GroupID(1)
	st, _ := c.Nodes[0].Routes().Group(g)
	leader := st.Leader
	follower := c.Nodes[int(leader)%3] // a node that is not the leader
	fs := servers[int(follower.NodeID())-1]
	keys := keysOfGroup(t, fs, g, "fw", 2000)

	const wantTransfers = 6
	var transfers atomic.Int32
	transfersDone := make(chan struct{})
	go func() { // move leadership around the three nodes, then stop the writers
		defer close(transfersDone)
		for i := 0; transfers.Load() < wantTransfers && i < 100; i++ {
			// The leader's node transfers (TransferLeader refuses elsewhere).
			st, _ := c.Nodes[0].Routes().Group(g)
			target := slotstore.NodeID(i%3 + 1)
			if st.Leader != 0 && st.Leader != target {
				tctx, tcancel := context.WithTimeout(context.Background(), 2*time.Second)
				if err := c.Nodes[st.Leader-1].TransferLeader(tctx, g, target); err == nil {
					transfers.Add(1)
				}
				tcancel()
			}
			time.Sleep(40 * time.Millisecond) // let writes flow under each leader
		}
	}()

	type outcome struct {
		revision string
		errors   []string
	}
	results := make([]outcome, len(keys))
	var next atomic.Int32
	var wwg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			for {
				select {
				case <-transfersDone:
					return
				default:
				}
				i := int(next.Add(1)) - 1
				if i >= len(keys) {
					return
				}
				for attempt := 0; attempt < 100; attempt++ {
					r := fs.do("PUT", "/v1/kv/"+keys[i], fmt.Sprintf(`{"value":"v%d"}`, i), "Idempotency-Key", "ik-"+keys[i])
					if r.code == 200 {
						results[i].revision = r.header.Get("ETag")
						break
					}
					results[i].errors = append(results[i].errors, fmt.Sprintf("%d %s", r.code, r.errCode()))
					if (r.code != 503 && r.code != 429) || !strings.Contains(string(r.body), `"retryable":true`) {
						t.Errorf("%s: a non-retryable failure during a leader change: %d %s", keys[i], r.code, r.body)
						break
					}
					time.Sleep(20 * time.Millisecond) // a client pacing its retry of a retryable answer
				}
			}
		}()
	}
	wwg.Wait()
	<-transfersDone
	written := min(int(next.Load()), len(keys))
	keys = keys[:written]
	if transfers.Load() < wantTransfers {
		t.Fatalf("only %d leader transfers happened; the test did not exercise leader changes", transfers.Load())
	}
	retried := 0
	for i, k := range keys {
		if results[i].revision == "" {
			t.Fatalf("%s never succeeded: %v", k, results[i].errors)
		}
		if len(results[i].errors) > 0 {
			retried++
		}
		// Applied exactly once: the stored revision is the one answered
		// first (a second apply would have moved it).
		r := servers[0].eventually(200, "GET", "/v1/kv/"+k, "")
		if r.header.Get("ETag") != results[i].revision {
			t.Fatalf("%s: stored revision %s, answered %s — applied twice?", k, r.header.Get("ETag"), results[i].revision)
		}
	}
	t.Logf("%d writes, %d leader transfers, %d writes needed a retry", len(keys), transfers.Load(), retried)
}

// TestNoLiveLeaderAnswersRouteNotReady: a node that cannot see a live leader
// says so — route_not_ready (or another explicit 503) — and never guesses.
func TestNoLiveLeaderAnswersRouteNotReady(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2})
	s := serve(t, c.Nodes[0])
	s.eventually(200, "PUT", "/v1/kv/before", `{"value":"x"}`)
	_ = c.Nodes[1].Close()
	_ = c.Nodes[2].Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := s.do("PUT", "/v1/kv/after", `{"value":"x"}`)
		if r.code == 200 {
			t.Fatal("a write was acknowledged without a quorum")
		}
		if r.code != 503 || r.errCode() == "" {
			t.Fatalf("without a quorum: %d %s, want an explicit 503", r.code, r.body)
		}
		if r.errCode() == "route_not_ready" {
			if r.header.Get("Retry-After") == "" {
				t.Fatal("route_not_ready without Retry-After")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %s after 15s; want route_not_ready once the leader stepped down", r.errCode())
		}
	}
	// Readiness follows once the surviving replicas give up on their
	// leaders (one election timeout): poll for it, bounded.
	testutil.WaitUntil(t, time.Until(deadline), 20*time.Millisecond, "readyz 503 without a quorum", func() bool {
		return s.do("GET", "/readyz", "").code == 503
	})
}
