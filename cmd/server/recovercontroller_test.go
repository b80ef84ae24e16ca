package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestRecoverControllerThroughTheBinary: `slotmeta recover-controller` on a
// node's data directory with the node's flags — refused while the node
// runs, then it reports what the controller replica holds; a recovery that
// names no node of the cluster, and a rejoin without its base, are refused
// — before anything is written.
// (The recovery itself: cluster.TestRecoverTheController.)
func TestRecoverControllerThroughTheBinary(t *testing.T) {
	pc := procConfig{dataDir: t.TempDir(), api: freePort(t), raft: freePort(t)}
	p := startProc(t, pc)
	testutil.WaitFor(t, 15*time.Second, 20*time.Millisecond, func() (bool, string) {
		code, b := p.do("PUT", "/v1/kv/app.k", `{"value":"v"}`)
		return code == 200, fmt.Sprintf("%d %s", code, b)
	})
	node := []string{"--data-dir", pc.dataDir, "--api-addr", pc.api, "--raft-addr", pc.raft}
	run := func(args ...string) (int, string, string) {
		return runBin(t, nil, append(append([]string{"recover-controller"}, args...), node...)...)
	}
	if code, _, stderr := run(); code != 1 || !strings.Contains(stderr, "still running") {
		t.Fatalf("while the node runs: exit %d, %q", code, stderr)
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run()
	var rep struct {
		Node, Commit, Applied uint64
		Voters                []uint64
		Done, Role            string
	}
	if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil || rep.Node != 1 || rep.Done != "status" || rep.Role != "voter" ||
		rep.Commit == 0 || rep.Applied != rep.Commit || len(rep.Voters) != 1 || rep.Voters[0] != 1 {
		t.Fatalf("status: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	if code, _, stderr := run("--accept-data-loss", "--lost", "7"); code != 1 || !strings.Contains(stderr, "node 7 is not a node") {
		t.Fatalf("a recovery naming no node of the cluster: exit %d, %q", code, stderr)
	}
	if code, _, stderr := run("--rejoin", "--lost", "7"); code != 1 || !strings.Contains(stderr, "names the base") {
		t.Fatalf("a rejoin without its base: exit %d, %q", code, stderr)
	}
	// Refused before anything is written: the replica is still there.
	if code, _, stderr := run("--rejoin", "--base", "2", "--lost", "7"); code != 1 || !strings.Contains(stderr, "node 7 is not a node") {
		t.Fatalf("a rejoin naming no node of the cluster lost: exit %d, %q", code, stderr)
	}
	if code, _, stderr := run(); code != 0 {
		t.Fatalf("status after the refused rejoin: exit %d, %q", code, stderr)
	}
	if code, _, stderr := run("--lost", "x"); code != 2 || !strings.Contains(stderr, "node ids") {
		t.Fatalf("--lost x: exit %d, %q", code, stderr)
	}
	p = startProc(t, pc) // the data directory is untouched: the node starts again
	testutil.WaitFor(t, 15*time.Second, 20*time.Millisecond, func() (bool, string) {
		code, b := p.do("GET", "/v1/kv/app.k", "")
		return code == 200, fmt.Sprintf("%d %s", code, b)
	})
}
