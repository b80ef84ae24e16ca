package chaos

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestQuiesceAvailability (make chaos, QUIESCE_ROUNDS rounds): three nodes
// on namespace hosts with --quiesce and 8 groups, default Raft timing. Each
// round lets the cluster sit idle until its groups quiesce (ten election
// timeouts: 10 s), then
//
//  1. reads a key of every group through a node that does not lead it — a
//     local ReadIndex on a quiesced follower, the way every wake touches a
//     replica — and counts the groups whose term changed (an election the
//     wake caused), and
//  2. lets the groups quiesce again, kills or cuts (alternating) the node
//     leading group 1, and measures for every group that node led how long
//     until a write to it through another node is acknowledged (each group
//     retried on its own),
//
// then heals or restarts the node. It reports the windows and the terms; it
// fails only on writes not acknowledged within 20 s. (It does not observe
// the quiesce itself: 12 s of idleness are above dragonboat's 10 s
// threshold; the cluster test TestQuiescedGroupWakes… checks that a group
// quiesces.)
func TestQuiesceAvailability(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("QUIESCE_ROUNDS"))
	if rounds <= 0 {
		t.Skip("QUIESCE_ROUNDS not set (make chaos sets it)")
	}
	const groups = 8
	hc := startHosts(t, "--quiesce", "--groups", strconv.Itoa(groups), "--balancer=false", "--leader-hold-down", "2s")
	keys := groupKeys(t, hc, groups)
	for g, k := range keys {
		if a := hc.do(hc.url(0), request{method: "PUT", path: "/v1/kv/" + k, body: `{"value":"0"}`}); a.code != 200 {
			t.Fatalf("first write to group %d: %d %s", g, a.code, a.body)
		}
	}
	var windows []time.Duration
	var wakeElections, wakeReads int
	for r := 0; r < rounds; r++ {
		hc.agreedLeader(1, 0, 30*time.Second)
		time.Sleep(12 * time.Second) // idle: every group quiesces
		before := groupTerms(t, hc)
		for g, k := range keys {
			i := hc.notLeading(g)
			if a := hc.do(hc.url(i), request{method: "GET", path: "/v1/kv/" + k}); a.code != 200 {
				t.Logf("quiesce: wake read of group %d via node %d: %d %s", g, i+1, a.code, a.body)
			}
			wakeReads++
		}
		time.Sleep(3 * time.Second) // a hold: the controller's views follow reports of up to a second ago
		after := groupTerms(t, hc)
		changed := 0
		for g, term := range before {
			if after[g] != term {
				changed++
			}
		}
		wakeElections += changed
		time.Sleep(12 * time.Second) // a hold: idle again, every group quiesces again

		target := hc.groupLeader(0, 1)
		var led []slotstore.GroupID
		leaders := groupLeaders(t, hc)
		for g, l := range leaders {
			if l == target {
				led = append(led, g)
			}
		}
		slices.Sort(led)
		kind := "kill"
		h := hc.c.Hosts[target-1]
		start := time.Now()
		if r%2 == 0 {
			h.Kill()
		} else {
			kind = "cut"
			h.Cut()
		}
		other := int(target) % hc.size() // a node other than the target (0-based)
		var mu sync.Mutex
		var round []time.Duration
		var wg sync.WaitGroup
		for _, g := range led {
			wg.Go(func() {
				i := 0
				if _, ok := testutil.Eventually(time.Until(start.Add(20*time.Second)), 20*time.Millisecond, func() (bool, string) {
					i++
					a := hc.do(hc.url(other), request{method: "PUT", path: "/v1/kv/" + keys[g], body: fmt.Sprintf(`{"value":"%d"}`, i)})
					return a.code == 200, ""
				}); ok {
					mu.Lock()
					round = append(round, time.Since(start))
					mu.Unlock()
					return
				}
				t.Errorf("quiesce round %d (%s node %d): group %d took no write within 20 s", r+1, kind, target, g)
			})
		}
		wg.Wait()
		slices.Sort(round)
		t.Logf("quiesce: round=%d fault=%s target=n%d (controller leader: %v) groups_led=%d windows=%v wake_reads=%d wake_elections=%d",
			r+1, kind, target, hc.ctrlLeader(other) == target, len(led), round, len(keys), changed)
		windows = append(windows, round...)
		if kind == "kill" {
			h.Start()
		} else {
			h.Heal()
		}
		h.WaitReady(time.Now().Add(60 * time.Second))
	}
	slices.Sort(windows)
	if len(windows) > 0 {
		t.Logf("quiesce availability: rounds=%d groups_faulted=%d window_p50=%v window_p99=%v window_max=%v wake_reads=%d wake_elections=%d",
			rounds, len(windows), windows[len(windows)/2], windows[(len(windows)*99)/100], windows[len(windows)-1], wakeReads, wakeElections)
	}
}

// groupKeys finds one key for each of groups 1..n (from node 1's routes).
func groupKeys(t *testing.T, hc *hostCluster, n int) map[slotstore.GroupID]string {
	t.Helper()
	routes, err := getJSON[struct {
		HashSlots []struct {
			Group slotstore.GroupID `json:"group"`
		} `json:"hash_slots"`
	}](hc, 0, "/v1/cluster/routes")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[slotstore.GroupID]string{}
	for i := 0; len(keys) < n && i < 100000; i++ {
		k := fmt.Sprintf("quiesce-%d", i)
		g := routes.HashSlots[slotstore.HashSlotOfString(k)].Group
		if _, ok := keys[g]; !ok && g != 0 {
			keys[g] = k
		}
	}
	if len(keys) < n {
		t.Fatalf("found keys for %d of %d groups", len(keys), n)
	}
	return keys
}

type groupObs struct {
	ID     slotstore.GroupID `json:"id"`
	Leader slotstore.NodeID  `json:"leader"`
	Term   uint64            `json:"term"`
}

func groupViews(t *testing.T, hc *hostCluster) []groupObs {
	t.Helper()
	for i := range hc.size() {
		if !hc.c.Hosts[i].Running() {
			continue
		}
		v, err := getJSON[struct {
			Items []groupObs `json:"items"`
		}](hc, i, "/v1/cluster/groups")
		if err == nil {
			return v.Items
		}
	}
	t.Fatal("no node answered GET /v1/cluster/groups")
	return nil
}

func groupTerms(t *testing.T, hc *hostCluster) map[slotstore.GroupID]uint64 {
	out := map[slotstore.GroupID]uint64{}
	for _, g := range groupViews(t, hc) {
		out[g.ID] = g.Term
	}
	return out
}

func groupLeaders(t *testing.T, hc *hostCluster) map[slotstore.GroupID]slotstore.NodeID {
	out := map[slotstore.GroupID]slotstore.NodeID{}
	for _, g := range groupViews(t, hc) {
		out[g.ID] = g.Leader
	}
	return out
}

// notLeading is a running node (0-based) that does not lead group g.
func (hc *hostCluster) notLeading(g slotstore.GroupID) int {
	l := hc.groupLeader(0, g)
	for i, h := range hc.c.Hosts {
		if slotstore.NodeID(h.ID) != l && h.Running() {
			return i
		}
	}
	return 0
}
