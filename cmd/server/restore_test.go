package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestRestoreThroughTheBinary: the README's way — a node backs itself up
// (POST /v1/cluster/backups), `slotmeta restore` lays out a new data
// directory from the backup with the node flags the restored node will run
// with, and that node serves what was written before the backup, under a
// new cluster id, and takes writes. A second restore into the same
// directory, one of a damaged backup, and a start with other members than
// the restore's are refused, saying why.
func TestRestoreThroughTheBinary(t *testing.T) {
	p := startProc(t, procConfig{dataDir: t.TempDir(), api: freePort(t), raft: freePort(t)})
	retry := func(method, path, body string, want int) []byte {
		var got []byte
		testutil.WaitFor(t, 15*time.Second, 20*time.Millisecond, func() (bool, string) {
			code, b := p.do(method, path, body)
			got = b
			return code == want, fmt.Sprintf("%s %s: %d %s", method, path, code, b)
		})
		return got
	}
	for i := range 20 {
		retry("PUT", fmt.Sprintf("/v1/kv/app.k%d", i), fmt.Sprintf(`{"value":"v%d"}`, i), 200)
	}
	retry("POST", "/v1/users", `{"uid":"u1","name":"Ada"}`, 201)
	var b struct {
		ID, State, Dir string
	}
	_ = json.Unmarshal(retry("POST", "/v1/cluster/backups", "", 202), &b)
	testutil.WaitFor(t, 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		_, body := p.do("GET", "/v1/cluster/backups/"+b.ID, "")
		_ = json.Unmarshal(body, &b)
		return b.State == "done", string(body)
	})
	var old struct {
		ClusterID string `json:"cluster_id"`
	}
	_ = json.Unmarshal(retry("GET", "/v1/cluster", "", 200), &old)
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	restoreCmd := func(args ...string) (int, string, string) {
		return runBin(t, nil, append([]string{"restore"}, args...)...)
	}
	pc := procConfig{dataDir: filepath.Join(t.TempDir(), "restored"), api: freePort(t), raft: freePort(t)}
	node := []string{"--data-dir", pc.dataDir, "--api-addr", pc.api, "--raft-addr", pc.raft}
	code, stdout, stderr := restoreCmd(append([]string{"--from", b.Dir}, node...)...)
	if code != 0 || !strings.Contains(stdout, "restored backup "+b.ID) {
		t.Fatalf("restore: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := restoreCmd(append([]string{"--from", b.Dir}, node...)...); code != 1 || !strings.Contains(stderr, "not empty") {
		t.Fatalf("a restore into a used data directory: exit %d, %q", code, stderr)
	}
	damaged := filepath.Join(t.TempDir(), "damaged")
	if err := os.CopyFS(damaged, os.DirFS(b.Dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(damaged, "controller.0000"), 5); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := restoreCmd("--from", damaged, "--data-dir", filepath.Join(t.TempDir(), "d2")); code != 1 || !strings.Contains(stderr, "controller.0000") {
		t.Fatalf("a restore of a damaged backup: exit %d, %q", code, stderr)
	}
	if code, _, stderr := restoreCmd("--data-dir", filepath.Join(t.TempDir(), "d3")); code != 2 || !strings.Contains(stderr, "--from") {
		t.Fatalf("a restore without --from: exit %d, %q", code, stderr)
	}
	// Started with other founding members than the restore's: refused.
	other := exec.Command(serverBin, append(node, "--initial-members", "1="+pc.raft+",2="+freePort(t), "--peer-addr", freePort(t))...)
	if out, err := other.CombinedOutput(); err == nil || !strings.Contains(string(out), "restored for the members") {
		t.Fatalf("a start with other members: %v\n%s", err, out)
	}

	check := exec.Command(serverBin, append(node, "--check-config", "--peer-addr", freePort(t))...)
	if out, err := check.CombinedOutput(); err != nil || !strings.Contains(string(out), "laid out from backup "+b.ID) {
		t.Fatalf("--check-config of the restored data directory: %v\n%s", err, out)
	}
	p = startProc(t, pc)
	for i := range 20 {
		var kv struct{ Value string }
		_ = json.Unmarshal(retry("GET", fmt.Sprintf("/v1/kv/app.k%d", i), "", 200), &kv)
		if kv.Value != fmt.Sprintf("v%d", i) {
			t.Fatalf("app.k%d restored as %q", i, kv.Value)
		}
	}
	retry("GET", "/v1/users/u1", "", 200)
	retry("PUT", "/v1/kv/app.new", `{"value":"n"}`, 200)
	var now struct {
		ClusterID string `json:"cluster_id"`
	}
	_ = json.Unmarshal(retry("GET", "/v1/cluster", "", 200), &now)
	if now.ClusterID == "" || now.ClusterID == old.ClusterID {
		t.Fatalf("restored cluster id %q (the backed-up one %q)", now.ClusterID, old.ClusterID)
	}
}
