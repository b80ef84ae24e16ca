package scripts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// The ops scripts' cluster: four nodes, replication factor 3, so that node 4
// holds no replica of group 1.
const (
	opsNodes  = 4
	opsGroups = 4
	// The balancer is off: the test places replicas, leaders and slots by
	// hand (drains still run without it).
	opsNodeArgs = "--rtt 10ms --groups 4 --replication-factor 3 --enable-hash-slot-migration --balancer=false"
)

// opsGroup is the part of a group view (GET /v1/cluster/groups) the ops
// tests read.
type opsGroup struct {
	ID           int `json:"id"`
	DesiredPeers []struct {
		Node int `json:"node"`
	} `json:"desired_peers"`
	PreferredLeader int   `json:"preferred_leader"`
	PreferredSetAt  int64 `json:"preferred_set_at_ms"`
	Leader          int   `json:"leader"`
	Term            int   `json:"term"`
	Voters          []int `json:"voters"`
	Learners        []int `json:"learners"`
	ObservedBy      int   `json:"observed_by"`
}

func (g opsGroup) peers() []int {
	var out []int
	for _, p := range g.DesiredPeers {
		out = append(out, p.Node)
	}
	slices.Sort(out)
	return out
}

// follower is a voter of g that does not lead it.
func (g opsGroup) follower(t *testing.T) int {
	t.Helper()
	for _, v := range g.Voters {
		if v != g.Leader {
			return v
		}
	}
	t.Fatalf("group %d has no follower voter: %+v", g.ID, g)
	return 0
}

// opsSkip skips unless this machine can run the ops scripts.
func opsSkip(t *testing.T, tools ...string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("cluster.sh reads /proc")
	}
	for _, tool := range append([]string{"bash", "curl", "python3"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the ops scripts need %s: %v", tool, err)
		}
	}
}

// runOps runs scripts/NAME with args against api (SLOTMETA_API) and returns
// its output and exit status. It never lets a script run past timeout.
func runOps(t *testing.T, timeout time.Duration, api string, env []string, name string, args ...string) (string, int) {
	t.Helper()
	path, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(cleanEnv(), "SLOTMETA_API="+api, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s did not finish within %v:\n%s", name, strings.Join(args, " "), timeout, out.String())
	}
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
		}
		code = exit.ExitCode()
	}
	t.Logf("$ %s %s → exit %d in %v\n%s", name, strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out.String())
	return out.String(), code
}

// opsGroups reads every group's view from node i.
func (c *cluster) opsGroups(i int) []opsGroup {
	c.t.Helper()
	code, body := c.get(i, "/v1/cluster/groups")
	if code != http.StatusOK {
		c.t.Fatalf("GET /v1/cluster/groups on node %d: %d %s", i, code, body)
	}
	var list struct {
		Items []opsGroup `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		c.t.Fatalf("GET /v1/cluster/groups: %v\n%s", err, body)
	}
	return list.Items
}

func (c *cluster) opsGroup(i, id int) opsGroup {
	c.t.Helper()
	code, body := c.get(i, fmt.Sprintf("/v1/cluster/groups/%d", id))
	if code != http.StatusOK {
		c.t.Fatalf("GET /v1/cluster/groups/%d on node %d: %d %s", id, i, code, body)
	}
	var g opsGroup
	if err := json.Unmarshal([]byte(body), &g); err != nil {
		c.t.Fatalf("GET /v1/cluster/groups/%d: %v\n%s", id, err, body)
	}
	return g
}

// opsWaitGroup polls group id's view on node 1 until ok accepts it; the view
// is the controller leader's aggregate of status reports, refreshed about
// once a second, so it trails what a script was just told.
// A wait that times out shows the reconciler's last decisions too (why a
// leader did not move).
func (c *cluster) opsWaitGroup(patience time.Duration, id int, what string, ok func(opsGroup) bool) opsGroup {
	c.t.Helper()
	var g opsGroup
	deadline := time.Now().Add(patience)
	testutil.WaitFor(c.t, patience, 100*time.Millisecond, func() (bool, string) {
		g = c.opsGroup(1, id)
		if ok(g) {
			return true, ""
		}
		state := fmt.Sprintf("group %d: %s; last view %+v", id, what, g)
		if time.Until(deadline) < time.Second {
			_, decisions := c.get(1, "/v1/cluster/decisions?limit=20")
			state += "\nthe reconciler's last decisions: " + decisions
		}
		return false, state
	})
	return g
}

// TestOpsScripts runs transfer-leader.sh, rebalance-leaders.sh and
// move-replica.sh against a real four-node cluster, each against another node.
func TestOpsScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server and runs a four-node cluster")
	}
	opsSkip(t, "go")
	script, err := filepath.Abs("cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Access control on: every script and every read of the test carries
	// the named admin token, and the audit trail shows its name.
	const opsToken = "ops-admin-token-0123456789"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("admin "+opsToken+" ops-admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opsEnv := []string{"SLOTMETA_TOKEN=" + opsToken}
	c := &cluster{t: t, script: script, token: opsToken}
	nodeArgs := []string{"SLOTMETA_NODE_ARGS=" + opsNodeArgs + " --tokens-file " + tokens} // wins over run's default
	c.up(opsNodes, opsNodes, nodeArgs)
	c.waitReady(15*time.Second, 1, 2, 3, 4)
	api := func(i int) string { return c.url(i, "") }

	// Settled: every group observed with its desired voters and led by its
	// preferred leader (the reconciler moves the leaders there after
	// bootstrap; a transfer refused while its target catches up is tried
	// again after the 5 s cooldown — under the whole suite's load on two
	// cores one group once took longer than 20 s).
	for id := 1; id <= opsGroups; id++ {
		c.opsWaitGroup(45*time.Second, id, "observed, led by its preferred leader, with its desired voters", func(g opsGroup) bool {
			v := slices.Clone(g.Voters)
			slices.Sort(v)
			return g.Leader != 0 && g.Leader == g.PreferredLeader && g.ObservedBy != 0 &&
				slices.Equal(v, g.peers()) && len(g.Learners) == 0
		})
	}
	g1 := c.opsGroup(1, 1)
	if slices.Contains(g1.peers(), 4) {
		t.Fatalf("node 4 holds a replica of group 1 (replication factor 3 expected): %+v", g1)
	}

	// transfer-leader.sh to a follower voter, through node 4 (which holds no
	// replica of group 1).
	target := g1.follower(t)
	out, code := runOps(t, 30*time.Second, api(4), opsEnv, "transfer-leader.sh", "1", strconv.Itoa(target))
	if code != 0 || !strings.Contains(out, "preflight: safe") {
		t.Fatalf("transfer-leader.sh 1 %d exited %d", target, code)
	}
	// The server's answer says the target led; the test does not poll the
	// group view for it: the reconciler may take the group back to its
	// preferred leader before a later look (CI saw it back at node 1, term
	// 5, before the test's first poll).
	if want := fmt.Sprintf("group 1: node %d leads at term", target); !strings.Contains(out, want) {
		t.Fatalf("transfer-leader.sh 1 %d did not report %q", target, want)
	}

	// transfer-leader.sh to node 4, not a peer: refused by the preflight,
	// nothing sent.
	out, code = runOps(t, 30*time.Second, api(2), opsEnv, "transfer-leader.sh", "1", "4")
	if code != 1 || !strings.Contains(out, "target_not_desired_peer") || strings.Contains(out, "transferring group 1 from") {
		t.Fatalf("transfer-leader.sh 1 4 exited %d; want 1, target_not_desired_peer and no transfer", code)
	}

	// The reconciler takes group 1 back to its preferred leader (that intent
	// is fresh); --prefer moves the preference along, so leadership stays.
	g1 = c.opsWaitGroup(10*time.Second, 1, "led by its preferred leader again", func(g opsGroup) bool {
		return g.Leader != 0 && g.Leader == g.PreferredLeader
	})
	target = g1.follower(t)
	out, code = runOps(t, 30*time.Second, api(3), opsEnv, "transfer-leader.sh", "1", strconv.Itoa(target), "--prefer")
	if code != 0 || !strings.Contains(out, "preferred leader is now node "+strconv.Itoa(target)) {
		t.Fatalf("transfer-leader.sh 1 %d --prefer exited %d", target, code)
	}
	c.opsWaitGroup(5*time.Second, 1, fmt.Sprintf("led and preferred by node %d", target), func(g opsGroup) bool {
		return g.Leader == target && g.PreferredLeader == target
	})
	time.Sleep(2500 * time.Millisecond) // a hold, not a wait: two reconciler rounds in which leadership must stay
	if g := c.opsGroup(1, 1); g.Leader != target {
		t.Fatalf("group 1 moved away from node %d after transfer-leader.sh --prefer: %+v", target, g)
	}

	// Skew the preferences: every group prefers its lowest peer.
	for _, g := range c.opsGroups(1) {
		body := fmt.Sprintf(`{"node":%d}`, g.peers()[0])
		if code, resp := c.put(1, fmt.Sprintf("/v1/cluster/groups/%d/preferred-leader", g.ID), body); code != http.StatusOK {
			t.Fatalf("PUT group %d's preferred leader %s: %d %s", g.ID, body, code, resp)
		}
	}

	// rebalance-leaders.sh --dry-run changes nothing.
	before := c.opsGroups(1)
	if out, code := runOps(t, 30*time.Second, api(2), opsEnv, "rebalance-leaders.sh", "--dry-run"); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("rebalance-leaders.sh --dry-run exited %d", code)
	}
	for i, g := range c.opsGroups(1) {
		if g.PreferredLeader != before[i].PreferredLeader || g.PreferredSetAt != before[i].PreferredSetAt {
			t.Fatalf("rebalance-leaders.sh --dry-run changed group %d's preference: %+v → %+v", g.ID, before[i], g)
		}
	}

	// rebalance-leaders.sh: preferences spread, every leader follows.
	out, code = runOps(t, 60*time.Second, api(2), opsEnv, "rebalance-leaders.sh", "--timeout", "40")
	if code != 0 {
		t.Fatalf("rebalance-leaders.sh exited %d:\n%s", code, out)
	}
	after := c.opsGroups(1)
	withReplicas := map[int]bool{}
	prefers := map[int]int{}
	for _, g := range after {
		for _, n := range g.peers() {
			withReplicas[n] = true
		}
		prefers[g.PreferredLeader]++
		if g.Leader == 0 || g.Leader != g.PreferredLeader {
			t.Errorf("after rebalance-leaders.sh, group %d is led by %d but prefers %d", g.ID, g.Leader, g.PreferredLeader)
		}
		if g.PreferredSetAt < before[g.ID-1].PreferredSetAt {
			t.Errorf("group %d's intent was not refreshed: set at %d, before %d", g.ID, g.PreferredSetAt, before[g.ID-1].PreferredSetAt)
		}
	}
	limit := (len(after) + len(withReplicas) - 1) / len(withReplicas)
	for n, k := range prefers {
		if k > limit {
			t.Errorf("after rebalance-leaders.sh node %d is preferred by %d groups, more than ceil(%d/%d) = %d", n, k, len(after), len(withReplicas), limit)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Acknowledged writes in every group, read back after each restart below.
	probes := c.writeProbes(40)

	// move-replica.sh: a source that is not a peer is refused; then a voter
	// that does not lead group 1 hands its replica to node 4.
	g1 = c.opsGroup(1, 1)
	from := g1.follower(t)
	if out, code := runOps(t, 30*time.Second, api(3), opsEnv, "move-replica.sh", "1", "4", strconv.Itoa(from)); code != 1 || !strings.Contains(out, "not a desired peer") {
		t.Fatalf("move-replica.sh 1 4 %d exited %d; want 1 and 'not a desired peer'", from, code)
	}
	out, code = runOps(t, 60*time.Second, api(3), opsEnv, "move-replica.sh", "1", strconv.Itoa(from), "4", "--timeout", "45")
	if code != 0 || !strings.Contains(out, "succeeded") || !strings.Contains(out, "catch_up") {
		t.Fatalf("move-replica.sh 1 %d 4 exited %d", from, code)
	}
	c.opsWaitGroup(5*time.Second, 1, "voters include node 4, not node "+strconv.Itoa(from), func(g opsGroup) bool {
		return slices.Contains(g.Voters, 4) && !slices.Contains(g.Voters, from) &&
			slices.Contains(g.peers(), 4) && !slices.Contains(g.peers(), from)
	})
	// The node that received the replica restarts on its own data after a
	// SIGKILL (issue 51: it crash-looped, panicking as it replayed its own
	// addition). The node that lost it is killed in TestKillsAfterPlacementChanges
	// (internal/chaos): killed here too, a replica moved back onto it by the
	// drain below once stayed a learner that received nothing for 100 s (the
	// next session's lead: see the stop note of 2026-12-07).
	c.killAndStart(4)
	c.opsWaitGroup(30*time.Second, 1, "led, with node 4 among its voters after the restarts", func(g opsGroup) bool {
		return g.Leader != 0 && slices.Contains(g.Voters, 4) && !slices.Contains(g.Voters, from)
	})
	c.readProbes(4, probes)

	// group.sh: a group that owns slots does not retire; two slots of group
	// 4 split off into a new group and merge back (which retires it); a
	// group created on named nodes, then retired.
	if out, code := runOps(t, 30*time.Second, api(2), opsEnv, "group.sh", "retire", "1"); code != 1 || !strings.Contains(out, "still owns hash slot") {
		t.Fatalf("group.sh retire 1 exited %d; want 1 and 'still owns hash slot'", code)
	}
	if _, code := runOps(t, 30*time.Second, api(2), opsEnv, "group.sh", "split"); code != 2 {
		t.Fatalf("group.sh split without GROUP exited %d; want 2", code)
	}
	slots := c.slotsOf(4)
	split := fmt.Sprintf("%d,%d", slots[0], slots[1])
	out, code = runOps(t, 60*time.Second, api(2), opsEnv, "group.sh", "split", "4", "--slots", split, "--timeout", "45")
	if code != 0 || !strings.Contains(out, "succeeded") || !strings.Contains(out, fmt.Sprintf("released hash slot %d", slots[0])) ||
		!strings.Contains(out, fmt.Sprintf("released hash slot %d", slots[1])) {
		t.Fatalf("group.sh split 4 --slots %s exited %d", split, code)
	}
	var newGroup int
	if _, err := fmt.Sscanf(out[strings.Index(out, "into new group "):], "into new group %d", &newGroup); err != nil {
		t.Fatalf("group.sh split names no new group: %v", err)
	}
	if got := c.slotsOf(newGroup); !slices.Equal(got, slots[:2]) {
		t.Fatalf("after the split group %d owns %v, want %v", newGroup, got, slots[:2])
	}
	// A node holding a replica of the new group restarts after a SIGKILL.
	split0 := c.opsGroup(1, newGroup).peers()[0]
	c.killAndStart(split0)
	c.readProbes(split0, probes)
	out, code = runOps(t, 60*time.Second, api(3), opsEnv, "group.sh", "merge", strconv.Itoa(newGroup), "4", "--timeout", "45")
	if code != 0 || !strings.Contains(out, "retired") {
		t.Fatalf("group.sh merge %d 4 exited %d", newGroup, code)
	}
	if got := c.slotsOf(4); !slices.Equal(got, slots) {
		t.Fatalf("after the merge group 4 owns %v, want %v", got, slots)
	}
	out, code = runOps(t, 60*time.Second, api(1), opsEnv, "group.sh", "create", "--peers", "2,3,4", "--timeout", "45")
	if code != 0 || !strings.Contains(out, "succeeded") {
		t.Fatalf("group.sh create exited %d", code)
	}
	created := c.opsGroups(1)[len(c.opsGroups(1))-1]
	if !slices.Equal(created.peers(), []int{2, 3, 4}) || created.ID <= newGroup {
		t.Fatalf("the created group: %+v (after group %d)", created, newGroup)
	}
	if out, code := runOps(t, 30*time.Second, api(1), opsEnv, "group.sh", "retire", strconv.Itoa(created.ID)); code != 0 || !strings.Contains(out, "retired") {
		t.Fatalf("group.sh retire %d exited %d", created.ID, code)
	}

	// add-node.sh with the balancer turned off says nothing will move.
	if out, code := runOps(t, 30*time.Second, api(1), opsEnv, "add-node.sh", "4", "--timeout", "20"); code != 1 || !strings.Contains(out, "balancer is turned off") {
		t.Fatalf("add-node.sh 4 with the balancer off exited %d; want 1 and 'balancer is turned off'", code)
	}
	// drain-node.sh --remove: node 4's replicas move off (drains run
	// without the balancer), then it is removed; add-node.sh refuses it.
	held := 0
	for _, g := range c.opsGroups(1) {
		if slices.Contains(g.peers(), 4) {
			held++
		}
	}
	if held == 0 {
		t.Fatal("node 4 holds no replica to drain")
	}
	out, code = runOps(t, 120*time.Second, api(2), opsEnv, "drain-node.sh", "4", "--remove", "--timeout", "100")
	if code != 0 || !strings.Contains(out, "node 4 drained") || !strings.Contains(out, "node 4 removed") ||
		!strings.Contains(out, fmt.Sprintf("%d replicas to move", held)) {
		t.Fatalf("drain-node.sh 4 --remove exited %d", code)
	}
	for _, g := range c.opsGroups(1) {
		if slices.Contains(g.peers(), 4) || slices.Contains(g.Voters, 4) {
			t.Fatalf("group %d still has node 4 after the drain: %+v", g.ID, g)
		}
	}
	// Every node that received a replica from the drain restarts after a
	// SIGKILL (node 4 is removed: its own start is refused, a later test's
	// matter).
	for _, n := range []int{1, 2, 3} {
		c.killAndStart(n)
	}
	c.readProbes(1, probes)
	if out, code := runOps(t, 30*time.Second, api(1), opsEnv, "add-node.sh", "4"); code != 1 || !strings.Contains(out, "node 4 is removed") {
		t.Fatalf("add-node.sh 4 after its removal exited %d; want 1 and 'node 4 is removed'", code)
	}

	// The audit trail holds every admin action the scripts took, named
	// after their token, each with its outcome.
	code, body := c.get(3, "/v1/cluster/audit?limit=1000")
	var trail struct {
		Items []struct {
			Who, Role, Action, Outcome string
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &trail); code != http.StatusOK || err != nil {
		t.Fatalf("GET /v1/cluster/audit: %d %v %s", code, err, body)
	}
	done := map[string]bool{}
	for _, r := range trail.Items {
		if r.Who != "ops-admin" || r.Role != "admin" {
			t.Errorf("an audit record not by the scripts' token: %+v", r)
		}
		done[r.Action+" "+r.Outcome] = true
	}
	for _, want := range []string{
		"POST /v1/cluster/groups/{id}/leader-transfer ok",
		"PUT /v1/cluster/groups/{id}/preferred-leader ok",
		"POST /v1/cluster/groups/{id}/replica-moves ok",
		"POST /v1/cluster/groups/{id}/split ok",
		"POST /v1/cluster/groups/{id}/merge ok",
		"POST /v1/cluster/groups ok",
		"DELETE /v1/cluster/groups/{id} ok",
		"DELETE /v1/cluster/groups/{id} refused",
		"POST /v1/cluster/nodes/{id}/drain ok",
		"DELETE /v1/cluster/nodes/{id} ok",
	} {
		if !done[want] {
			t.Errorf("the audit trail lacks %q; it has %v", want, done)
		}
	}
}

// killAndStart SIGKILLs node i, starts it again on its data and waits
// until it is ready.
func (c *cluster) killAndStart(i int) {
	c.t.Helper()
	c.must(time.Minute, nil, "kill", strconv.Itoa(i))
	c.must(2*time.Minute, nil, "start", strconv.Itoa(i))
	c.waitReady(60*time.Second, i)
}

// writeProbes writes n keys (probe-0 … probe-n-1, spread over the hash
// slots and so over every group) through node 1 and returns them once each
// was acknowledged.
func (c *cluster) writeProbes(n int) []string {
	c.t.Helper()
	var keys []string
	for i := range n {
		key := fmt.Sprintf("probe-%d", i)
		if code, body := c.retry(http.MethodPut, 1, "/v1/kv/"+key, fmt.Sprintf(`{"value":%q}`, key)); code != http.StatusOK {
			c.t.Fatalf("PUT /v1/kv/%s: %d %s", key, code, body)
		}
		keys = append(keys, key)
	}
	return keys
}

// readProbes reads every key back through node i (linearizable) and fails
// the test on a key lost or changed.
func (c *cluster) readProbes(i int, keys []string) {
	c.t.Helper()
	for _, key := range keys {
		code, body := c.retry(http.MethodGet, i, "/v1/kv/"+key, "")
		if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf(`"value":%q`, key)) {
			c.t.Fatalf("GET /v1/kv/%s through node %d: %d %s", key, i, code, body)
		}
	}
}

// slotsOf lists the hash slots group g owns in node 1's routing table.
func (c *cluster) slotsOf(g int) []int {
	c.t.Helper()
	code, body := c.get(1, "/v1/cluster/routes")
	if code != http.StatusOK {
		c.t.Fatalf("GET /v1/cluster/routes: %d %s", code, body)
	}
	var routes struct {
		HashSlots []struct {
			HashSlot int `json:"hash_slot"`
			Group    int `json:"group"`
		} `json:"hash_slots"`
	}
	if err := json.Unmarshal([]byte(body), &routes); err != nil {
		c.t.Fatal(err)
	}
	var out []int
	for _, r := range routes.HashSlots {
		if r.Group == g {
			out = append(out, r.HashSlot)
		}
	}
	return out
}

// TestOpsScriptsToken checks, against a stub server, that the ops scripts
// send SLOTMETA_TOKEN as a bearer token (and nothing when it is unset), fail
// clearly on an error answer, and reject bad usage with exit 2.
func TestOpsScriptsToken(t *testing.T) {
	opsSkip(t)
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"not_found","message":"group 7 does not exist","retryable":false}}`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		token, want string
		name        string
		args        []string
	}{
		{"s3cr3t", "Bearer s3cr3t", "transfer-leader.sh", []string{"7", "2"}},
		{"", "", "transfer-leader.sh", []string{"7", "2"}},
		{"s3cr3t", "Bearer s3cr3t", "rebalance-leaders.sh", nil},
		{"s3cr3t", "Bearer s3cr3t", "move-replica.sh", []string{"7", "1", "2"}},
	} {
		mu.Lock()
		auth = nil
		mu.Unlock()
		var env []string
		if tc.token != "" {
			env = []string{"SLOTMETA_TOKEN=" + tc.token}
		}
		out, code := runOps(t, 30*time.Second, srv.URL, env, tc.name, tc.args...)
		if code != 1 || !strings.Contains(out, "does not exist") {
			t.Errorf("%s %v against a 404: exit %d, want 1 and the server's message", tc.name, tc.args, code)
		}
		mu.Lock()
		if len(auth) == 0 {
			t.Errorf("%s made no request", tc.name)
		}
		for _, a := range auth {
			if a != tc.want {
				t.Errorf("%s sent Authorization %q, want %q", tc.name, a, tc.want)
			}
		}
		mu.Unlock()
	}
	for _, bad := range [][]string{
		{"transfer-leader.sh"}, {"transfer-leader.sh", "1", "x"}, {"transfer-leader.sh", "1", "2", "--timeout", "0"},
		{"rebalance-leaders.sh", "extra"}, {"move-replica.sh", "1", "2"}, {"move-replica.sh", "1", "2", "2"},
	} {
		if out, code := runOps(t, 30*time.Second, srv.URL, nil, bad[0], bad[1:]...); code != 2 || !strings.Contains(out, "usage:") {
			t.Errorf("%v: exit %d, want 2 with the usage", bad, code)
		}
	}
}

// TestOpsScriptsShellcheck lints the ops scripts, when shellcheck is installed.
func TestOpsScriptsShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck is not installed")
	}
	cmd := exec.Command("shellcheck", "-x", "ops-lib.sh", "transfer-leader.sh", "rebalance-leaders.sh", "move-replica.sh", "group.sh", "add-node.sh", "drain-node.sh")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
}

// opsStub is a stand-in API: each "METHOD PATH" answers the next of its
// canned replies (the last one again once they run out).
type opsStub struct {
	mu      sync.Mutex
	replies map[string][]opsReply
	calls   map[string]int
}

type opsReply struct {
	code int
	body string
}

func (s *opsStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.RequestURI()
	s.mu.Lock()
	replies, n := s.replies[key], s.calls[key]
	s.calls[key]++
	s.mu.Unlock()
	if len(replies) == 0 {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"code":"not_found","message":"stub: no reply for %s","retryable":false}}`, key)
		return
	}
	rep := replies[min(n, len(replies)-1)]
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.code)
	fmt.Fprint(w, rep.body)
}

// TestOpsScriptsFailures drives the scripts' failure paths against stubs: a
// transfer refused after a safe preflight (with a retryable 503 on the way),
// a rebalance that does not converge, and a replica move whose task fails.
func TestOpsScriptsFailures(t *testing.T) {
	opsSkip(t)
	view := func(leader, preferred int) string {
		return fmt.Sprintf(`{"id":1,"desired_peers":[{"node":1,"replica_id":1},{"node":2,"replica_id":2}],`+
			`"preferred_leader":%d,"preferred_set_at_ms":1,"leader":%d,"term":5,"voters":[1,2],"learners":[],`+
			`"observed_by":1,"observation_age_ms":10,"config_epoch":1}`, preferred, leader)
	}
	run := func(t *testing.T, replies map[string][]opsReply, timeout time.Duration, name string, args ...string) (string, int) {
		t.Helper()
		srv := httptest.NewServer(&opsStub{replies: replies, calls: map[string]int{}})
		defer srv.Close()
		return runOps(t, timeout, srv.URL, nil, name, args...)
	}

	t.Run("transfer refused", func(t *testing.T) {
		out, code := run(t, map[string][]opsReply{
			"GET /v1/cluster/groups/1": {
				{503, `{"error":{"code":"not_leader","message":"controller leader unknown","retryable":true}}`},
				{200, view(1, 1)}},
			"GET /v1/cluster/groups/1/leader-transfer/preflight?target_node=2": {{200,
				`{"group":1,"target_node":2,"ok":true,"blockers":[],"leader":1,"term":5,"target_lag":0,` +
					`"target_report_age_ms":20,"observed_by":1,"observation_age_ms":10}`}},
			"POST /v1/cluster/groups/1/leader-transfer": {{409,
				`{"error":{"code":"conflict","message":"leader transfer refused: it is not safe now","retryable":false,` +
					`"details":[{"field":"transfer_in_flight","reason":"a leader transfer of group 1 is in flight"}]}}`}},
		}, 30*time.Second, "transfer-leader.sh", "1", "2")
		if code != 1 || !strings.Contains(out, "preflight: safe") || !strings.Contains(out, "transfer_in_flight: a leader transfer of group 1 is in flight") {
			t.Fatalf("exit %d; want 1 with the blocker", code)
		}
	})

	t.Run("transfer refused for now", func(t *testing.T) {
		out, code := run(t, map[string][]opsReply{
			"GET /v1/cluster/groups/1": {{200, view(1, 1)}},
			"GET /v1/cluster/groups/1/leader-transfer/preflight?target_node=2": {{200,
				`{"group":1,"target_node":2,"ok":true,"blockers":[],"leader":1,"term":5,"target_lag":0,` +
					`"target_report_age_ms":20,"observed_by":1,"observation_age_ms":10}`}},
			"POST /v1/cluster/groups/1/leader-transfer": {{503,
				`{"error":{"code":"busy","message":"leader transfer of group 1 refused for now: retry in 4s","retryable":true,` +
					`"details":[{"field":"transfer_backoff","reason":"1 failed transfer(s) of group 1 in a row: next attempt in 4s"}]}}`}},
		}, 30*time.Second, "transfer-leader.sh", "1", "2")
		if code != 1 || !strings.Contains(out, "refused for now") || !strings.Contains(out, "transfer_backoff") {
			t.Fatalf("exit %d; want 1, refused for now with the blocker:\n%s", code, out)
		}
	})

	t.Run("rebalance timeout", func(t *testing.T) {
		now := time.Now().UnixMilli()
		out, code := run(t, map[string][]opsReply{
			"GET /v1/cluster/nodes":                     {{200, `{"items":[{"id":1,"raft_addr":"a","state":"active"},{"id":2,"raft_addr":"b","state":"active"}],"next_cursor":""}`}},
			"GET /v1/cluster/groups":                    {{200, `{"items":[` + view(2, 1) + `],"next_cursor":""}`}},
			"PUT /v1/cluster/groups/1/preferred-leader": {{200, view(2, 2)}}, // a view from before the PUT
			"GET /v1/cluster/decisions": {{200, fmt.Sprintf(`{"items":[`+
				`{"at_ms":%d,"group":1,"kind":"skip","reason":"target_lagging","detail":"node 1 is 99 entries behind the leader (limit 64)","leader":2,"term":5,"preferred_leader":1,"target_lag":99,"target_report_age_ms":5,"observer":1},`+
				`{"at_ms":%d,"group":1,"kind":"transfer","reason":"preferred_leader","leader":2,"term":5,"preferred_leader":1,"target_lag":0,"target_report_age_ms":5,"observer":1}`+
				`],"next_cursor":""}`, now, now-5000)}},
		}, 30*time.Second, "rebalance-leaders.sh", "--timeout", "2")
		if code != 1 || !strings.Contains(out, "did not converge") || !strings.Contains(out, "a view from before the change") ||
			!strings.Contains(out, "group 1: leader 2 (term 5), preferred 1; latest decision") ||
			!strings.Contains(out, "skip target_lagging - node 1 is 99 entries behind") {
			t.Fatalf("exit %d; want 1 with group 1 and its latest decision", code)
		}
	})

	t.Run("rebalance without an active peer", func(t *testing.T) {
		out, code := run(t, map[string][]opsReply{
			"GET /v1/cluster/nodes":  {{200, `{"items":[{"id":1,"raft_addr":"a","state":"draining"},{"id":2,"raft_addr":"b","state":"removed"}],"next_cursor":""}`}},
			"GET /v1/cluster/groups": {{200, `{"items":[` + view(2, 1) + `],"next_cursor":""}`}},
		}, 30*time.Second, "rebalance-leaders.sh")
		if code != 1 || !strings.Contains(out, "group 1 has no active desired peer (peers 1,2; states node 1 draining, node 2 removed); nothing changed") {
			t.Fatalf("exit %d; want 1, naming the group and its peers' states", code)
		}
	})

	t.Run("move fails", func(t *testing.T) {
		task := func(phase, status, errMsg string, history int) string {
			h := []string{
				`{"phase":"add_learner","at_ms":1,"voters":[1,2],"learners":[5],"config_change_id":3,"note":"replica 5 added as a learner on node 3"}`,
			}[:history]
			return fmt.Sprintf(`{"id":9,"kind":"replica_move","group":1,"from_node":2,"to_node":3,"old_replica_id":2,"new_replica_id":5,`+
				`"phase":%q,"status":%q,"attempt":1,"error":%q,"history":[%s],"created_at_ms":1,"updated_at_ms":1}`,
				phase, status, errMsg, strings.Join(h, ","))
		}
		out, code := run(t, map[string][]opsReply{
			"POST /v1/cluster/groups/1/replica-moves": {{202, task("add_learner", "running", "", 0)}},
			"GET /v1/cluster/tasks/9": {
				{404, `{"error":{"code":"not_found","message":"task 9 does not exist","retryable":false}}`},
				{200, task("catch_up", "running", "", 1)},
				{200, task("catch_up", "failed", "phase catch_up did not complete within 2m0s: node 3 has not reported replica 5 yet", 1)}},
		}, 30*time.Second, "move-replica.sh", "1", "2", "3", "--timeout", "20")
		if code != 1 || !strings.Contains(out, "phase add_learner -> catch_up (running)") ||
			!strings.Contains(out, "replica 5 added as a learner on node 3") ||
			!strings.Contains(out, "task 9 failed in phase catch_up: phase catch_up did not complete within 2m0s") {
			t.Fatalf("exit %d; want 1 with the phase change, its note and the task's error", code)
		}
	})
}
