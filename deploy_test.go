package slotmeta

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
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

// TestSysusersCreatesTheUnitsUser: the sysusers.d file creates the user and
// group the systemd unit runs as (systemd-sysusers into a scratch root).
func TestSysusersCreatesTheUnitsUser(t *testing.T) {
	sysusers, err := exec.LookPath("systemd-sysusers")
	if err != nil {
		t.Skip("systemd-sysusers is not installed")
	}
	unit, err := os.ReadFile("deploy/slotmeta.service")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile("deploy/slotmeta.sysusers")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir() // installed where the unit's comment says
	for _, d := range []string{"etc", "usr/lib/sysusers.d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "usr/lib/sysusers.d/slotmeta.conf"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sysusers, "--root="+root).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	for _, f := range []string{"passwd", "group"} {
		data, err := os.ReadFile(filepath.Join(root, "etc", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "\nslotmeta:") && !strings.HasPrefix(string(data), "slotmeta:") {
			t.Errorf("/etc/%s lacks slotmeta:\n%s", f, data)
		}
	}
	for _, want := range []string{"User=slotmeta", "Group=slotmeta", "deploy/slotmeta.sysusers"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("deploy/slotmeta.service lacks %q", want)
		}
	}
}

// TestDistMakesTarballsWithSums: `make dist` (one platform here) makes a
// tarball whose binary reports the version, with the unit, its sysusers.d
// file and the docs, owned by root, and SHA256SUMS that matches it.
func TestDistMakesTarballsWithSums(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := t.TempDir()
	const version = "v0.0.0-disttest"
	cmd := exec.Command("make", "dist", "DIST_DIR="+dir, "DIST_PLATFORMS=linux/"+runtime.GOARCH, "VERSION="+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	name := "slotmeta-" + version + "-linux-" + runtime.GOARCH
	data, err := os.ReadFile(filepath.Join(dir, name+".tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%x  %s.tar.gz\n", sha256.Sum256(data), name); string(sums) != want {
		t.Fatalf("SHA256SUMS is %q, want %q", sums, want)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d, not root", h.Name, h.Uid, h.Gid)
		}
		got[h.Name] = true
		if h.Name == name+"/slotmeta" {
			bin := filepath.Join(dir, "slotmeta")
			f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if out, err := exec.Command(bin, "--version").Output(); err != nil || !strings.Contains(string(out), version) {
				t.Errorf("the binary's version: %q %v", out, err)
			}
		}
	}
	for _, want := range []string{"slotmeta", "README.md", "docs/runbook.md", "deploy/slotmeta.service", "deploy/slotmeta.sysusers",
		"deploy/prometheus/slotmeta.rules.yml"} {
		if !got[name+"/"+want] {
			t.Errorf("the tarball lacks %s/%s", name, want)
		}
	}
}
