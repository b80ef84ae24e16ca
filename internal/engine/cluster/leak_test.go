package cluster

import (
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestCloseJoinsEveryGoroutine: a node that served writes and its peer
// port leaves no goroutine behind once Close returns — every goroutine it
// started has an owner that stops and waits for it (issue 53). Checked
// twice: at once, no goroutine runs code of ours (what Close did not wait
// for would); and, with goleak's retries, none at all outlives the node.
func TestCloseJoinsEveryGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	cfg := testConfig(t, t.TempDir(), freeAddr(t))
	cfg.PeerAddr, cfg.ClusterSecret = freeAddr(t), "a-secret-of-at-least-sixteen-bytes"
	n := startNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, _, err := n.Propose(ctx, &meta.CreateUser{User: meta.User{UID: "leak"}}); err != nil || !res.OK() {
		t.Fatalf("a write: %v %+v", err, res)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if left := oursRunning(); len(left) > 0 {
		t.Errorf("%d goroutines of ours still run when Close returned:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
	goleak.VerifyNone(t, before)
}

// oursRunning is the stacks of the goroutines, this one's aside, that run
// a function of this module's internal packages.
func oursRunning() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && strings.Contains(g, "github.com/slotmeta/slotmeta/internal/") && !strings.Contains(g, "testing.tRunner") {
			out = append(out, g)
		}
	}
	return out
}

// TestAFailedStartReleasesWhatItOpened: a Start that fails late — its
// peer port is taken — closes what it had opened (the store, the
// NodeHost with its Raft port and directory lock) in reverse, so the same
// data directory and Raft address start at once afterwards; and it leaves
// no goroutine behind.
func TestAFailedStartReleasesWhatItOpened(t *testing.T) {
	before := goleak.IgnoreCurrent()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := testConfig(t, t.TempDir(), freeAddr(t))
	cfg.PeerAddr, cfg.ClusterSecret = taken.Addr().String(), "a-secret-of-at-least-sixteen-bytes"
	if n, err := Start(cfg); err == nil || !strings.Contains(err.Error(), "peer listener") {
		if n != nil {
			n.Close()
		}
		t.Fatalf("Start on a taken peer port: %v", err)
	}
	// The Raft port is free again at once: held from here until the node
	// below binds it, so that no other process's connection takes it as
	// its local port meanwhile (CI, 2026-12-08: "address already in use"
	// after the goroutine check's wait, the port taken by something else).
	held, err := net.Listen("tcp", cfg.RaftAddr)
	if err != nil {
		t.Fatalf("the failed Start left its Raft port bound: %v", err)
	}
	goleak.VerifyNone(t, before)
	cfg.PeerAddr = freeAddr(t)
	held.Close()
	n := startNode(t, cfg)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}
