package slotmeta

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestDashboardAndRulesNameRealMetrics: the Grafana dashboard parses, and
// every slotmeta_* series it and the alerting rules read is one the code
// exports (by its full name, or by Name under the slotmeta namespace), so a
// renamed metric fails here and not on an operator's empty panel.
func TestDashboardAndRulesNameRealMetrics(t *testing.T) {
	dash, err := os.ReadFile("deploy/prometheus/slotmeta.dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dash, &d); err != nil || len(d.Panels) == 0 {
		t.Fatalf("dashboard: %v (%d panels)", err, len(d.Panels))
	}
	rules, err := os.ReadFile("deploy/prometheus/slotmeta.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(rules)
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			text += "\n" + tg.Expr
		}
	}
	var src strings.Builder
	for _, dir := range []string{"internal", "cmd"} {
		err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			src.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// What the code exports: full names, and Namespace "slotmeta" with a
	// Subsystem and a Name.
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`"(slotmeta_[a-z_]+)"`).FindAllStringSubmatch(src.String(), -1) {
		exported[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`Namespace:\s*"slotmeta",\s*(?:Subsystem:\s*"([a-z_]+)",\s*)?Name:\s*"([a-z_]+)"`).FindAllStringSubmatch(src.String(), -1) {
		if m[1] != "" {
			exported["slotmeta_"+m[1]+"_"+m[2]] = true
		} else {
			exported["slotmeta_"+m[2]] = true
		}
	}
	seen := map[string]bool{}
	for _, name := range regexp.MustCompile(`slotmeta_[a-z_]*[a-z]`).FindAllString(text, -1) {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
		if seen[base] {
			continue
		}
		seen[base] = true
		if !exported[base] {
			t.Errorf("%s is read by the dashboard or the rules but no code exports it", base)
		}
	}
	if len(seen) < 10 {
		t.Fatalf("only %d metrics found in the dashboard and rules", len(seen))
	}
}
