package scripts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// previousReleaseFile names the release before this one and its commit:
// the mixed-version test builds that commit from git (its tag may be
// missing from a clone).
const previousReleaseFile = "testdata/previous-release"

// TestRollingUpgradeFromThePreviousRelease (issue 47) builds the previous
// release from git, founds three nodes on it and writes, then upgrades
// them one at a time with scripts/cluster.sh upgrade — SIGTERM, the new
// binary on the same data, /readyz — under writers and compare-and-set
// incrementers that never stop. While the cluster is mixed the features
// of the new release are refused, naming themselves (a state check, a
// rebuild in place), and the first upgraded node is rolled back to the
// previous binary and upgraded again (the documented rollback). Once the
// last node runs the new release the cluster version rises to it on every
// node and in every data directory. Then: no acknowledged write is lost,
// the counter is within what was acknowledged and what may have applied,
// every group's replicas agree (a state check of each) and so do the
// controller's (every node's copy hashes alike at one index).
func TestRollingUpgradeFromThePreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release and the server, and runs a three-node cluster")
	}
	opsSkip(t, "go", "git", "tar")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tag, commit := previousRelease(t, root)
	bins := t.TempDir()
	oldBin := buildCommit(t, root, commit, filepath.Join(bins, "src"), filepath.Join(bins, "slotmeta-"+tag), tag)
	newBin := filepath.Join(bins, "slotmeta-new")
	goBuild(t, root, newBin, "new")

	script := filepath.Join(root, "scripts", "cluster.sh")
	c := &cluster{t: t, script: script}
	c.up(nodes, nodes, []string{"SLOTMETA_SERVER_BIN=" + oldBin})
	c.waitReady(30*time.Second, 1, 2, 3)
	if code, body := c.put(1, "/v1/kv/upgrade-counter", `{"value":"0"}`); code != http.StatusOK {
		t.Fatalf("the counter: %d %s", code, body)
	}

	w := &upgradeLoad{c: c, acked: map[string]string{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { w.write(ctx, i) })
		wg.Go(func() { w.increment(ctx, i) })
	}
	stopLoad := sync.OnceFunc(func() { stop(); wg.Wait() })
	t.Cleanup(stopLoad)
	w.waitProgress(t, "before the upgrade")

	upgrade := func(bin string, ids ...int) {
		t.Helper()
		args := []string{"upgrade", bin}
		for _, i := range ids {
			args = append(args, strconv.Itoa(i))
		}
		c.must(5*time.Minute, nil, args...)
		w.waitProgress(t, fmt.Sprintf("after %s", strings.Join(args, " ")))
	}

	// Mixed: node 1 runs the new release, 2 and 3 the previous one.
	upgrade(newBin, 1)
	sum := c.summary(1)
	if sum.Version != "0.2" || sum.ClusterVersion != "0.1" {
		t.Fatalf("node 1's summary while mixed: %+v", sum)
	}
	gated := func(what string, code int, body string) {
		t.Helper()
		if code != http.StatusPreconditionFailed || !strings.Contains(body, "state checks need cluster version 0.2; the cluster is at 0.1") {
			t.Fatalf("%s while mixed: %d %s", what, code, body)
		}
	}
	code, body := c.do(http.MethodPost, 1, "/v1/cluster/groups/1/check", "")
	gated("a state check", code, body)
	peer := c.opsGroup(1, 1).peers()[0]
	code, body = c.do(http.MethodPost, 1, "/v1/cluster/groups/1/replica-moves", fmt.Sprintf(`{"from_node":%d,"to_node":%d}`, peer, peer))
	gated("a rebuild in place", code, body)

	// The rollback: node 1 back on the previous release, on the data the
	// new one wrote while the cluster was mixed.
	upgrade(oldBin, 1)
	// The upgrade, one node at a time.
	upgrade(newBin, 1, 2, 3)
	testutil.WaitFor(t, 30*time.Second, 200*time.Millisecond, func() (bool, string) {
		for i := 1; i <= nodes; i++ {
			if s := c.summary(i); s.ClusterVersion != "0.2" || s.Version != "0.2" {
				return false, fmt.Sprintf("node %d: %+v", i, s)
			}
		}
		return true, ""
	})
	for i := 1; i <= nodes; i++ {
		b, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("node%d", i), "data", "MIN_VERSION"))
		if err != nil || strings.TrimSpace(string(b)) != "0.2" {
			t.Fatalf("node %d's data directory keeps the cluster version: %q %v", i, b, err)
		}
	}
	w.waitProgress(t, "after the cluster version rose")
	stopLoad()

	// Nothing acknowledged is lost; the counter is within bounds.
	for key, want := range w.acked {
		if got := c.kvValue(1, key); got != want {
			t.Fatalf("%s: acknowledged %q, reads %q", key, want, got)
		}
	}
	n, err := strconv.Atoi(c.kvValue(2, "upgrade-counter"))
	if err != nil || n < w.casAcked || n > w.casAcked+w.casUncertain {
		t.Fatalf("the counter reads %d (%v): %d increments acknowledged, %d more may have applied", n, err, w.casAcked, w.casUncertain)
	}
	t.Logf("%d writes acknowledged and read back (%d failed or unanswered; at most %v without an acknowledged write); counter %d: %d increments acknowledged, %d uncertain",
		len(w.acked), w.writeFailed, w.maxGap.Round(time.Millisecond), n, w.casAcked, w.casUncertain)

	// Every group's replicas agree, and so do the controller's.
	for _, g := range c.opsGroups(1) {
		testutil.WaitFor(t, 30*time.Second, 200*time.Millisecond, func() (bool, string) {
			code, body := c.do(http.MethodPost, 3, fmt.Sprintf("/v1/cluster/groups/%d/check", g.ID), "")
			return code == http.StatusOK && strings.Contains(body, `"verdict":"consistent"`), fmt.Sprintf("group %d: %d %s", g.ID, code, body)
		})
	}
	testutil.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		var at []clusterSummary
		for i := 1; i <= nodes; i++ {
			at = append(at, c.summary(i))
		}
		for _, s := range at[1:] {
			if s.ControllerApplied != at[0].ControllerApplied {
				return false, fmt.Sprintf("the nodes' copies of the controller are at different indexes: %+v", at)
			}
			if s.ControllerDigest != at[0].ControllerDigest {
				t.Fatalf("the controller's copies differ at index %d: %+v", s.ControllerApplied, at)
			}
		}
		return true, ""
	})
}

// previousRelease reads the release before this one: its tag and commit,
// which must be in the clone's history.
func previousRelease(t *testing.T, root string) (tag, commit string) {
	t.Helper()
	b, err := os.ReadFile(previousReleaseFile)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("%s: want \"TAG COMMIT\", got %q", previousReleaseFile, b)
	}
	tag, commit = f[0], f[1]
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("the previous release %s (%s) is not in this clone's history: %v %s (a shallow clone? fetch its tag)", tag, commit, err, out)
	}
	return tag, commit
}

// buildCommit builds the server of commit into bin, from a copy of its
// tree in src.
func buildCommit(t *testing.T, root, commit, src, bin, version string) string {
	t.Helper()
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v %s", commit, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	goBuild(t, src, bin, version)
	return bin
}

// goBuild builds ./cmd/server of the module in dir as make build does,
// naming it version. The build runs at the lowest CPU priority: make test
// runs other packages meanwhile, whose timing-sensitive tests starved
// behind a full build of the previous release (CI of 0587e5e: three of
// them failed).
func goBuild(t *testing.T, dir, bin, version string) {
	t.Helper()
	start := time.Now()
	argv := []string{"go", "build", "-ldflags", "-X main.version=" + version, "-o", bin, "./cmd/server"}
	if nice, err := exec.LookPath("nice"); err == nil {
		argv = append([]string{nice, "-n", "19"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", dir, err, out)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
}

// clusterSummary is the part of GET /v1/cluster the test reads (a node of
// the previous release leaves the versions and the digest out).
type clusterSummary struct {
	ClusterVersion    string `json:"cluster_version"`
	Version           string `json:"version"`
	ControllerApplied uint64 `json:"controller_applied"`
	ControllerDigest  string `json:"controller_digest"`
}

func (c *cluster) summary(i int) clusterSummary {
	c.t.Helper()
	code, body := c.get(i, "/v1/cluster")
	var s clusterSummary
	if code != http.StatusOK || json.Unmarshal([]byte(body), &s) != nil {
		c.t.Fatalf("GET /v1/cluster on node %d: %d %s", i, code, body)
	}
	return s
}

// kvValue reads key (linearizable) through node i.
func (c *cluster) kvValue(i int, key string) string {
	c.t.Helper()
	code, body := c.get(i, "/v1/kv/"+key)
	var kv struct {
		Value string `json:"value"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &kv) != nil {
		c.t.Fatalf("GET /v1/kv/%s on node %d: %d %s", key, i, code, body)
	}
	return kv.Value
}

// upgradeLoad writes and increments through every node in turn while the
// nodes are upgraded. A write is acknowledged by a 200 alone; anything
// else (a node restarting, a leader moving) leaves it unacknowledged, and
// an increment whose answer was not 200 or 412 may or may not have
// applied.
type upgradeLoad struct {
	c *cluster

	mu           sync.Mutex
	acked        map[string]string
	writeFailed  int
	casAcked     int
	casUncertain int
	// The longest time without an acknowledged write, and the last one.
	maxGap  time.Duration
	lastAck time.Time
}

// request sends one request without failing the test: code 0 when it got
// no answer.
func (w *upgradeLoad) request(ctx context.Context, method string, node int, path, body string, hdr ...string) (int, string) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, w.c.url(node, path), strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

func (w *upgradeLoad) write(ctx context.Context, id int) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		key, val := fmt.Sprintf("upgrade-w%d-%d", id, i), strconv.Itoa(i)
		code, _ := w.request(ctx, http.MethodPut, 1+i%nodes, "/v1/kv/"+key, `{"value":"`+val+`"}`)
		if ctx.Err() != nil {
			return // the answer may have been cut by the end of the test: neither
		}
		w.mu.Lock()
		if code == http.StatusOK {
			w.acked[key] = val
			now := time.Now()
			if !w.lastAck.IsZero() {
				w.maxGap = max(w.maxGap, now.Sub(w.lastAck))
			}
			w.lastAck = now
		} else {
			w.writeFailed++
		}
		w.mu.Unlock()
	}
}

func (w *upgradeLoad) increment(ctx context.Context, id int) {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for i := id; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		node := 1 + i%nodes
		code, body := w.request(ctx, http.MethodGet, node, "/v1/kv/upgrade-counter", "")
		var kv struct {
			Value    string `json:"value"`
			Revision uint64 `json:"revision"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &kv) != nil {
			continue
		}
		n, err := strconv.Atoi(kv.Value)
		if err != nil {
			continue
		}
		code, _ = w.request(ctx, http.MethodPut, node, "/v1/kv/upgrade-counter", `{"value":"`+strconv.Itoa(n+1)+`"}`,
			"If-Match", `"`+strconv.FormatUint(kv.Revision, 10)+`"`)
		w.mu.Lock()
		switch code {
		case http.StatusOK:
			w.casAcked++
		case http.StatusPreconditionFailed: // another incrementer won: nothing applied
		default:
			w.casUncertain++
		}
		w.mu.Unlock()
	}
}

// waitProgress waits until a write and an increment are acknowledged
// after now: the cluster serves.
func (w *upgradeLoad) waitProgress(t *testing.T, when string) {
	t.Helper()
	w.mu.Lock()
	writes, incs := len(w.acked), w.casAcked
	w.mu.Unlock()
	testutil.WaitFor(t, 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.acked) > writes && w.casAcked > incs,
			fmt.Sprintf("%s: no write or increment acknowledged (%d and %d so far)", when, len(w.acked), w.casAcked)
	})
}
