package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// peerCall sends one peer RPC request carrying secret and returns its status.
func peerCall(t *testing.T, peerAddr, method, name, secret string) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+peerAddr+"/peer/v1/"+name, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Slotmeta-Secret", secret)
	req.Header.Set("X-Slotmeta-Timeout-Ms", "2000")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("peer %s: %v", name, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestLoopbackClusterGeneratesItsSecret: three loopback nodes with API
// tokens and no --cluster-secret. The secret that used to be built in (and
// written in the source) is refused on the peer port; the cluster uses one
// generated at bootstrap — the same on every node, kept in each data
// directory with mode 0600, taken on the peer port, still used after a
// restart, received by a node that joins —, and the security status says
// so. Wrong secrets are rate-limited per source and counted; the right one
// is still taken.
func TestLoopbackClusterGeneratesItsSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	tokens := tokensFile(t)
	nodes := lkCluster(t, 3, "--tokens-file", tokens)
	launchLK(t, nodes)

	var secret string
	for _, n := range nodes {
		path := filepath.Join(n.arg("--data-dir"), "peer-secret")
		// The file is written when the node's controller replica applies
		// the bootstrap.
		testutil.WaitUntil(t, 10*time.Second, 20*time.Millisecond, "node's peer-secret file", func() bool {
			_, err := os.Stat(path)
			return err == nil
		})
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("node %d: %s has mode %v, want 0600", n.id, path, st.Mode().Perm())
		}
		got := strings.TrimSpace(string(b))
		if len(got) < 64 {
			t.Fatalf("node %d: generated secret %q is too short", n.id, got)
		}
		if secret == "" {
			secret = got
		} else if got != secret {
			t.Fatalf("node %d keeps another secret than node 1", n.id)
		}
	}

	peer1 := nodes[0].arg("--peer-addr")
	if code := peerCall(t, peer1, http.MethodPost, "propose", "slotmeta-insecure-loopback-secret"); code != http.StatusUnauthorized {
		t.Fatalf("the formerly built-in secret on the peer port: %d, want 401", code)
	}
	if code := peerCall(t, peer1, http.MethodGet, "status", secret); code != http.StatusOK {
		t.Fatalf("the generated secret on the peer port: %d, want 200", code)
	}

	req, _ := http.NewRequest(http.MethodGet, nodes[0].api+"/v1/cluster/security", nil)
	req.Header.Set("Authorization", "Bearer admin-token-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sec struct {
		ClusterSecret string `json:"cluster_secret"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&sec)
	resp.Body.Close()
	if sec.ClusterSecret != "generated" {
		t.Fatalf("security status cluster_secret %q, want generated", sec.ClusterSecret)
	}

	// A restarted node starts with the kept secret and is ready again.
	if err := nodes[1].signal(syscall.SIGTERM, 20*time.Second); err != nil {
		t.Fatalf("node 2 stop: %v", err)
	}
	nodes[1].start()
	nodes[1].waitReady(time.Now().Add(60 * time.Second))
	if code := peerCall(t, nodes[1].arg("--peer-addr"), http.MethodGet, "status", secret); code != http.StatusOK {
		t.Fatalf("restarted node with the generated secret: %d, want 200", code)
	}

	// A node that joins (through node 1's API, with an admin token of its
	// tokens file) receives the secret with the controller state.
	api4 := freePort(t)
	n4 := &lkNode{t: t, id: 4, api: "http://" + api4, log: &lkSyncBuffer{}, args: []string{"--node-id", "4", "--data-dir", t.TempDir(),
		"--api-addr", api4, "--raft-addr", freePort(t), "--peer-addr", freePort(t), "--join", nodes[0].arg("--api-addr"), "--tokens-file", tokens}}
	launchLK(t, []*lkNode{n4})
	path4 := filepath.Join(n4.arg("--data-dir"), "peer-secret")
	testutil.WaitUntil(t, 30*time.Second, 20*time.Millisecond, "the joined node keeps the cluster's secret", func() bool {
		b, err := os.ReadFile(path4)
		return err == nil && strings.TrimSpace(string(b)) == secret
	})
	if code := peerCall(t, n4.arg("--peer-addr"), http.MethodGet, "status", secret); code != http.StatusOK {
		t.Fatalf("the joined node with the cluster's secret: %d, want 200", code)
	}

	// Wrong secrets from one source: refused, then rate-limited, and
	// counted; the right one is still taken.
	limited := false
	for range 80 {
		if peerCall(t, peer1, http.MethodGet, "status", "guess") == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("80 wrong secrets in a row were never rate-limited")
	}
	if code := peerCall(t, peer1, http.MethodGet, "status", secret); code != http.StatusOK {
		t.Fatalf("right secret from a limited source: %d, want 200 (the nodes share the source on loopback)", code)
	}
	req, _ = http.NewRequest(http.MethodGet, nodes[0].api+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer admin-token-0123456789")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, reason := range []string{"wrong_secret", "rate_limited"} {
		if !metricPositive(string(b), `slotmeta_peer_auth_failures_total{reason="`+reason+`"}`) {
			t.Errorf("no peer auth failure counted as %s:\n%s", reason, grepLines(string(b), "peer_auth"))
		}
	}
}
