package scripts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

const (
	nodes  = 3
	groups = 4
)

// TestClusterScript drives scripts/cluster.sh through a cluster's life: up,
// status, kill, start, join, down — against real processes on free ports.
func TestClusterScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server and runs a three-node cluster")
	}
	if runtime.GOOS != "linux" {
		t.Skip("cluster.sh reads /proc")
	}
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("cluster.sh needs %s: %v", tool, err)
		}
	}
	script, err := filepath.Abs("cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, script: script}
	// up 3: the first build of the server may take a while.
	c.up(nodes, nodes+1, nil)
	c.waitReady(15*time.Second, 1, 2, 3)
	if code, body := c.put(1, "/v1/kv/x", `{"value":"1"}`); code != http.StatusOK {
		t.Fatalf("PUT /v1/kv/x on node 1: %d %s", code, body)
	}
	if out, code := c.run(time.Minute, nil, "up", strconv.Itoa(nodes)); code == 0 {
		t.Fatalf("up on a running cluster succeeded:\n%s", out)
	}
	if _, code := c.run(time.Minute, nil, "no-such-command"); code != 2 {
		t.Fatalf("an unknown command exited %d, want 2", code)
	}

	// status, with every JSON reader this machine has.
	readers := []string{""}
	for _, r := range []string{"jq", "python3", "awk"} {
		if _, err := exec.LookPath(r); err == nil {
			readers = append(readers, r)
		}
	}
	for _, r := range readers {
		var env []string
		if r != "" {
			env = []string{"SLOTMETA_CLUSTER_JSON=" + r}
		}
		out := c.eventually(15*time.Second, env, "status")
		for g := 1; g <= groups; g++ {
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^\s*group %d\s+leader \d+\s+term \d+\s+slots \d+$`, g)).MatchString(out) {
				t.Fatalf("status (JSON reader %q) does not show group %d with a leader:\n%s", r, g, out)
			}
		}
	}

	// kill 2, then start 2 on the same data.
	pid2 := c.pid(2)
	c.must(time.Minute, nil, "kill", "2")
	if c.alive(pid2) {
		t.Fatalf("node 2 (pid %d) still runs after kill 2", pid2)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "node2", "pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("node 2's pid file outlived kill 2: %v", err)
	}
	c.must(2*time.Minute, nil, "start", "2")
	c.waitReady(15*time.Second, 2)
	if code, body := c.get(2, "/v1/kv/x"); code != http.StatusOK || !strings.Contains(body, `"value":"1"`) {
		t.Fatalf("GET /v1/kv/x on node 2 after start 2: %d %s", code, body)
	}

	// join 4: a new node joins through node 1 and serves the same data.
	joined := nodes + 1
	c.must(2*time.Minute, nil, "join", strconv.Itoa(joined))
	c.waitReady(15*time.Second, joined)
	if code, body := c.get(joined, "/v1/kv/x"); code != http.StatusOK || !strings.Contains(body, `"value":"1"`) {
		t.Fatalf("GET /v1/kv/x on node %d after join: %d %s", joined, code, body)
	}
	c.waitReady(15*time.Second, 1, 2, 3, joined)
	if out := c.eventually(15*time.Second, nil, "status"); !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+\S+\s+running\s+\d+\s+200$`, joined)).MatchString(out) {
		t.Fatalf("status does not show node %d running and ready:\n%s", joined, out)
	}

	// down stops every node.
	pids := map[int]int{}
	for i := 1; i <= joined; i++ {
		pids[i] = c.pid(i)
	}
	c.must(time.Minute, nil, "down")
	for i, pid := range pids {
		if c.alive(pid) {
			t.Errorf("node %d (pid %d) still runs after down", i, pid)
		}
		if _, err := os.Stat(filepath.Join(c.dir, fmt.Sprintf("node%d", i), "pid")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("node %d's pid file outlived down: %v", i, err)
		}
	}
}

// up runs cluster.sh up n (with env) in a new directory, on ports free for
// ports nodes (more than n leaves room for a join), and stops the nodes
// when the test ends — its nodes' logs shown first when it failed. The
// ports were free a moment ago; when one was taken since, up tries others.
func (c *cluster) up(n, ports int, env []string) {
	t := c.t
	t.Helper()
	// The cluster dirs live under parent, made before the cleanup below is
	// registered: cleanups run last-in first-out, so down runs while the
	// dirs (and their pid files) still exist.
	parent := t.TempDir()
	t.Cleanup(func() {
		if c.dir == "" {
			return
		}
		if t.Failed() {
			c.dumpLogs()
		}
		if out, code := c.run(time.Minute, nil, "down"); code != 0 {
			t.Errorf("cleanup: down exited %d:\n%s", code, out)
		}
	})
	for attempt := 1; ; attempt++ {
		dir, err := os.MkdirTemp(parent, "cluster-")
		if err != nil {
			t.Fatal(err)
		}
		c.dir, c.base = dir, freeBase(t, ports)
		t.Logf("cluster dir %s, base port %d", c.dir, c.base)
		out, code := c.run(10*time.Minute, env, "up", strconv.Itoa(n))
		if code == 0 {
			t.Logf("%s", out)
			return
		}
		if !strings.Contains(out, "already in use") || attempt == 3 {
			t.Fatalf("cluster.sh up %d exited %d:\n%s", n, code, out)
		}
		t.Logf("cluster.sh up: a port was taken; trying other ports:\n%s", out)
		if out, code := c.run(time.Minute, nil, "down"); code != 0 {
			t.Fatalf("down exited %d:\n%s", code, out)
		}
	}
}

type cluster struct {
	t      *testing.T
	script string
	dir    string
	base   int
	token  string // sent as a bearer token when set
}

// run runs cluster.sh with args and returns its output and exit code.
func (c *cluster) run(timeout time.Duration, env []string, args ...string) (string, int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{c.script}, args...)...)
	cmd.Env = append(cleanEnv(),
		"SLOTMETA_CLUSTER_DIR="+c.dir,
		"SLOTMETA_BASE_PORT="+strconv.Itoa(c.base),
		"SLOTMETA_NODE_ARGS=--rtt 10ms --groups "+strconv.Itoa(groups))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = nil
	// The nodes must not hold our pipes; if one did, give up on it after a while.
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			c.t.Fatalf("cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		code = exit.ExitCode()
	}
	c.t.Logf("cluster.sh %s → %d in %v", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
	return out.String(), code
}

func (c *cluster) must(timeout time.Duration, env []string, args ...string) string {
	c.t.Helper()
	out, code := c.run(timeout, env, args...)
	if code != 0 {
		c.t.Fatalf("cluster.sh %s exited %d:\n%s", strings.Join(args, " "), code, out)
	}
	c.t.Logf("%s", out)
	return out
}

// eventually runs cluster.sh until it exits 0, for up to patience: status
// exits 1 while a node is not ready, and readiness can flap for a moment
// while a group's leadership moves. Every failed run is logged.
func (c *cluster) eventually(patience time.Duration, env []string, args ...string) string {
	c.t.Helper()
	var out string
	testutil.WaitFor(c.t, patience, 500*time.Millisecond, func() (bool, string) {
		var code int
		out, code = c.run(time.Minute, env, args...)
		if code == 0 {
			return true, ""
		}
		c.t.Logf("cluster.sh %s exited %d:\n%s", strings.Join(args, " "), code, out)
		return false, fmt.Sprintf("cluster.sh %s exited %d (its output is logged above)", strings.Join(args, " "), code)
	})
	c.t.Logf("%s", out)
	return out
}

// cleanEnv is this process's environment without SLOTMETA_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLOTMETA_") {
			env = append(env, kv)
		}
	}
	return env
}

func (c *cluster) pid(i int) int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("node%d", i), "pid"))
	if err != nil {
		c.t.Fatalf("node %d's pid: %v", i, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		c.t.Fatalf("node %d's pid file holds %q", i, b)
	}
	return pid
}

// alive reports whether pid is a running (not zombie) process of this
// cluster's binary.
func (c *cluster) alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
	if f := strings.Fields(rest); len(f) == 0 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return string(argv0) == filepath.Join(c.dir, "bin", "slotmeta")
}

var client = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{Proxy: nil}}

func (c *cluster) url(i int, path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", c.base+i-1, path)
}

func (c *cluster) do(method string, i int, path, body string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url(i, path), strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// get and put retry a retryable 503 (a leader change in flight, say) for up
// to 30 s, as the API's contract asks clients to; every retry is logged.
func (c *cluster) get(i int, path string) (int, string) {
	return c.retry(http.MethodGet, i, path, "")
}

func (c *cluster) put(i int, path, body string) (int, string) {
	return c.retry(http.MethodPut, i, path, body)
}

func (c *cluster) retry(method string, i int, path, body string) (int, string) {
	c.t.Helper()
	var code int
	var resp string
	// Not failing: the last answer is the caller's to judge.
	testutil.Eventually(30*time.Second, 200*time.Millisecond, func() (bool, string) {
		start := time.Now()
		code, resp = c.do(method, i, path, body)
		if code != http.StatusServiceUnavailable || !strings.Contains(resp, `"retryable":true`) {
			return true, ""
		}
		c.t.Logf("%s %s on node %d: %d after %v: %s; retryable", method, path, i, code, time.Since(start).Round(time.Millisecond), resp)
		return false, ""
	})
	return code, resp
}

// waitReady waits for every node's /readyz to answer 200, logging the
// answers that are not: cluster.sh has already waited for it, but a node's
// readiness can flap for a moment while a group's leadership moves.
func (c *cluster) waitReady(timeout time.Duration, ids ...int) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for _, i := range ids {
		testutil.WaitFor(c.t, time.Until(deadline), 200*time.Millisecond, func() (bool, string) {
			code, body := c.do(http.MethodGet, i, "/readyz", "")
			if code != http.StatusOK {
				c.t.Logf("node %d /readyz: %d %s; waiting", i, code, body)
			}
			return code == http.StatusOK, fmt.Sprintf("node %d /readyz: %d %s", i, code, body)
		})
	}
}

func (c *cluster) dumpLogs() {
	logs, _ := filepath.Glob(filepath.Join(c.dir, "node*", "log"))
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		c.t.Logf("--- %s (tail)\n%s", f, b)
	}
}

// freeBase picks a base port whose API, Raft and peer ports for n nodes are
// all free now: random bases in 20000–40000, kept below the kernel's
// ephemeral range so that no outgoing connection takes one of them later.
func freeBase(t *testing.T, n int) int {
	t.Helper()
	hi := 40000
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo < hi {
				hi = lo
			}
		}
	}
	hi -= 2000 + n // the highest port is base+2000+n-1
	if hi <= 20000 {
		t.Skipf("no room for %d nodes' ports between 20000 and the ephemeral range", n)
	}
	for range 100 {
		base := 20000 + rand.IntN(hi-20000)
		var ls []net.Listener
		ok := true
	ports:
		for _, off := range []int{0, 1000, 2000} {
			for i := range n {
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off+i))
				if err != nil {
					ok = false
					break ports
				}
				ls = append(ls, l)
			}
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free base port found")
	return 0
}
