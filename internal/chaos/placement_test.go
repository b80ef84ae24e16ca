package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestKillsAfterPlacementChanges (issue 51) runs on separate hosts, with
// the real binary: a fourth node joins; a replica move to it is followed by
// kill -9 of the node that received the replica and of the node it left, and
// a drain of a founding node by kill -9 of every node that received one of
// its replicas (two groups: the drain moves one to each other node). Each killed node starts again on its data (a node that
// received a replica by a move used to panic on every start). Histories
// run throughout through every node: linearizable, nothing lost, nothing
// applied twice; every acknowledged probe write reads back.
func TestKillsAfterPlacementChanges(t *testing.T) {
	hc := startHosts(t, append(slices.Clone(hostArgs), "--groups", "2")...)
	hc.c.AddHost() // node 4: joins, holds no replica
	if a := hc.do(hc.url(0), request{method: "PUT", path: "/v1/cluster/balancer", body: `{"paused":true}`}); a.code != http.StatusOK {
		t.Fatalf("pause the balancer: %d %s", a.code, a.body) // only the test's moves, and the drain's
	}
	const prefix = "placement"
	keys := []string{prefix + "-alpha", prefix + "-bravo", prefix + "-charlie"}
	rec := newRecorder()
	probes := &probeLog{}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	startKVClients(ctx, &wg, hc, keys, rec, 51, time.Now().Add(2*time.Minute), prefix)
	for _, i := range []int{0, 1} { // nodes 1 and 2 are never killed (node 2 is drained)
		wg.Add(1)
		go func() { defer wg.Done(); runProbes(ctx, hc, i, 0, prefix, probes) }()
	}
	acked := func(more int) {
		t.Helper()
		base := ackedProbes(probes)
		testutil.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() (bool, string) {
			n := ackedProbes(probes)
			return n >= base+more, fmt.Sprintf("%d probe writes acknowledged, want %d", n-base, more)
		})
	}
	kill := func(node slotstore.NodeID, why string) {
		t.Helper()
		h := hc.c.Hosts[node-1]
		h.Kill()
		h.Start()
		h.WaitReady(time.Now().Add(60 * time.Second))
		t.Logf("n%d killed -9 and started again (%s): ready", node, why)
		acked(20)
	}
	acked(50)

	// A move to node 4, then the receiver and the loser killed.
	task := runTaskVia(t, hc, "POST", "/v1/cluster/groups/1/replica-moves", `{"from_node":3,"to_node":4}`)
	t.Logf("moved group 1's replica n3→n4 (task %d)", task)
	acked(50)
	kill(4, "received group 1's replica by a move")
	kill(3, "lost group 1's replica by a move")

	// A drain of node 2: its replica of group 1 goes to node 3 and its
	// replica of group 2 to node 4, which are killed.
	before := map[slotstore.NodeID][]slotstore.GroupID{3: groupsOn(t, hc, 3), 4: groupsOn(t, hc, 4)}
	if a := hc.do(hc.url(0), request{method: "POST", path: "/v1/cluster/nodes/2/drain"}); a.code != http.StatusOK && a.code != http.StatusAccepted {
		t.Fatalf("drain node 2: %d %s", a.code, a.body)
	}
	testutil.WaitFor(t, 2*time.Minute, 100*time.Millisecond, func() (bool, string) {
		left := groupsOn(t, hc, 2)
		return len(left) == 0, fmt.Sprintf("node 2 still holds groups %v", left)
	})
	acked(50)
	received := 0
	for _, node := range []slotstore.NodeID{3, 4} {
		if got := groupsOn(t, hc, node); len(got) > len(before[node]) {
			received++
			kill(node, fmt.Sprintf("received a replica by the drain of node 2: groups %v, before %v", got, before[node]))
		}
	}
	if received == 0 {
		t.Fatalf("the drain of node 2 moved no replica to nodes 3 or 4")
	}

	stop()
	wg.Wait()
	for i, h := range hc.c.Hosts {
		if i != 1 { // node 2 is draining: /readyz says so
			h.WaitReady(time.Now().Add(30 * time.Second))
		}
	}
	lost, _ := checkKVHistory(t, hc, rec, keys, prefix, 51)
	n := 0
	for _, p := range probes.all() {
		if !p.ok {
			continue
		}
		n++
		var a answer
		testutil.Eventually(15*time.Second, 50*time.Millisecond, func() (bool, string) {
			a = hc.do(hc.url(n%2), request{method: "GET", path: kvPath(p.key)})
			return a.code != http.StatusServiceUnavailable, ""
		})
		if a.code != http.StatusOK || !strings.Contains(string(a.body), strconv.Quote(p.value)) {
			t.Errorf("acknowledged probe write %s reads back %d %s", p.key, a.code, a.body)
		}
	}
	checked := checkStatesOver(t, hc)
	t.Logf("placement kills: history acked=%d lost=%d; probes acknowledged=%d, all read back; %d groups' replicas checked, all agree", lost.acked, lost.lost, n, checked)
}

// checkStatesOver checks every group's replicas against each other through
// the API of a node on its host (issue 52), each again after a 503 for up
// to 30 s; any verdict but consistent fails t. It returns the groups
// checked.
func checkStatesOver(t *testing.T, hc *hostCluster) int {
	t.Helper()
	a := hc.do(hc.url(0), request{method: "GET", path: "/v1/cluster/groups"})
	var list struct {
		Items []struct {
			ID uint32 `json:"id"`
		} `json:"items"`
	}
	if a.code != http.StatusOK || json.Unmarshal(a.body, &list) != nil || len(list.Items) == 0 {
		t.Fatalf("the groups: %d %s", a.code, a.body)
	}
	for _, g := range list.Items {
		var got struct {
			Verdict   string   `json:"verdict"`
			Differing []uint16 `json:"differing"`
		}
		testutil.Eventually(30*time.Second, 200*time.Millisecond, func() (bool, string) {
			a = hc.do(hc.url(0), request{method: "POST", path: fmt.Sprintf("/v1/cluster/groups/%d/check", g.ID)})
			return a.code != http.StatusServiceUnavailable && (a.code != http.StatusOK || json.Unmarshal(a.body, &got) == nil && got.Verdict != "incomplete"), ""
		})
		if a.code != http.StatusOK || got.Verdict != "consistent" {
			t.Errorf("the state check of group %d: %d %s", g.ID, a.code, a.body)
		}
	}
	return len(list.Items)
}

// ackedProbes counts the acknowledged probe writes.
func ackedProbes(l *probeLog) int {
	n := 0
	for _, p := range l.all() {
		if p.ok {
			n++
		}
	}
	return n
}

// runTaskVia asks node 1 for a task and waits until it succeeded; it
// returns the task's id.
func runTaskVia(t *testing.T, hc *hostCluster, method, path, body string) uint64 {
	t.Helper()
	a := hc.do(hc.url(0), request{method: method, path: path, body: body})
	var task slotstore.Task
	if a.code != http.StatusAccepted || json.Unmarshal(a.body, &task) != nil {
		t.Fatalf("%s %s: %d %s", method, path, a.code, a.body)
	}
	testutil.WaitFor(t, time.Minute, 100*time.Millisecond, func() (bool, string) {
		got, err := getJSON[slotstore.Task](hc, 0, fmt.Sprintf("/v1/cluster/tasks/%d", task.ID))
		if err == nil && (got.Status == "failed" || got.Status == "cancelled") {
			t.Fatalf("task %d: %s at %s: %s", task.ID, got.Status, got.Phase, got.Error)
		}
		return err == nil && got.Status == "succeeded", fmt.Sprintf("task %d did not succeed: %+v %v", task.ID, got, err)
	})
	return task.ID
}

// groupsOn lists the groups with a desired peer on node.
func groupsOn(t *testing.T, hc *hostCluster, node slotstore.NodeID) []slotstore.GroupID {
	t.Helper()
	type groupList struct {
		Items []slotstore.GroupView `json:"items"`
	}
	list, err := getJSON[groupList](hc, 0, "/v1/cluster/groups")
	if err != nil {
		t.Fatal(err)
	}
	var out []slotstore.GroupID
	for _, g := range list.Items {
		if slices.ContainsFunc(g.DesiredPeers, func(p slotstore.DesiredPeer) bool { return p.Node == node }) {
			out = append(out, g.ID)
		}
	}
	return out
}

// checkKVHistory reads keys back through every node once the clients
// stopped, then checks the history: linearizable, no acknowledged write
// lost, nothing applied twice, no answer a correct server never gives
// (each a test error). It returns the lost-write report and the verdict.
func checkKVHistory(t *testing.T, hc *hostCluster, rec *recorder, keys []string, prefix string, seed int64) (lostReport, string) {
	t.Helper()
	finalKV, _ := finalReads(t, hc, rec, keys, nil)
	verdict, _ := linearizable("kv-"+prefix, seed, kvModel, rec.kv)
	if verdict != "ok" {
		t.Errorf("the history: %s", verdict)
	}
	var lost lostReport
	checkLostKV(rec.kv, finalKV, &lost)
	for _, f := range append(append(lost.details, rec.dups...), rec.failures...) {
		t.Error(f)
	}
	if dups := checkDuplicatesKV(rec.kv); len(dups) > 0 {
		t.Errorf("applied twice: %v", dups)
	}
	return lost, verdict
}
