package slotmeta

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnitVerifies runs systemd-analyze verify on deploy/slotmeta.service
// where systemd is installed (the binary's path replaced by one that exists
// here): a typo in a directive or a section fails it.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := os.ReadFile("deploy/slotmeta.service")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/slotmeta ") {
		t.Fatal("the unit no longer starts /usr/local/bin/slotmeta: update this test")
	}
	path := filepath.Join(t.TempDir(), "slotmeta.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/slotmeta", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", path).CombinedOutput(); err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestContainerfileBuildsAsMake: the container image's binary is built as
// `make build` builds it (pure Go), and runs with a data directory.
func TestContainerfileBuildsAsMake(t *testing.T) {
	cf, err := os.ReadFile("deploy/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0 go build", "./cmd/server", `"--data-dir", "/data"`, "USER 65532"} {
		if !strings.Contains(string(cf), want) {
			t.Errorf("deploy/Containerfile lacks %q", want)
		}
	}
	if !strings.Contains(string(mk), "CGO_ENABLED=0 $(GO) build") {
		t.Error("make build is no longer pure Go: align deploy/Containerfile")
	}
}

// TestAlertRules runs promtool on the alerting rules where Prometheus is
// installed (.ci/run installs Debian's): they parse, and their unit tests —
// a leaderless group alerts within a minute from a surviving node's series —
// pass.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed")
	}
	for _, args := range [][]string{{"check", "rules", "slotmeta.rules.yml"}, {"test", "rules", "slotmeta.rules.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "deploy/prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
