package slotmeta

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Dependencies point inward (docs/design.md §14, docs/adr/0001): the HTTP API, the
// console and the domain types compile without dragonboat or Pebble.
func TestAdaptersDoNotImportRaftOrStorage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{"./internal/httpapi", "./internal/console", "./internal/slotstore", "./internal/slotstore/meta", "./internal/slotstore/routing"} {
		noEngine(t, pkg, nil)
	}
}

// The leaf packages that route, project and lead the controller run without a NodeHost or a
// store, so that their tests drive them with fakes (their only tie to the
// engine is the controller's state-machine interfaces, through package
// controller).
func TestLeavesRunWithoutTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{"./internal/engine/dispatch", "./internal/engine/projector", "./internal/engine/controller/leader", "./internal/sim"} {
		noEngine(t, pkg, []string{"github.com/lni/dragonboat/v4/statemachine"})
	}
}

// noEngine fails t for every dragonboat or Pebble package pkg depends on,
// but those allowed.
func noEngine(t *testing.T, pkg string, allowed []string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		engine := strings.HasPrefix(dep, "github.com/lni/dragonboat") || strings.HasPrefix(dep, "github.com/cockroachdb/pebble")
		if engine && !slices.Contains(allowed, dep) {
			t.Errorf("%s depends on %s", pkg, dep)
		}
	}
}

// layers is the picture of docs/design.md §14: a package imports only
// packages of lower layers (of ours; the standard library and modules
// aside). A package missing here fails the test, so the picture grows with
// the code.
var layers = map[string]int{
	"internal/slotstore": 0, "internal/netguard": 0, "internal/crashlog": 0, "client": 0, "client/routed": 1,
	"internal/slotstore/meta": 1, "internal/slotstore/checks": 1, "internal/slotstore/clusterversion": 1, "internal/engine/diskguard": 1, "internal/slotstore/routing": 1, "internal/engine/raftlog": 1,
	"internal/engine/raftnet": 1, "internal/engine/heat": 1, "internal/backup": 1, "internal/auth": 1, "internal/certs": 1, "web": 1, "migrations": 1,
	"internal/engine/store": 2, "internal/engine/digests": 2, "internal/ctl": 2, "internal/engine/controller": 2, "internal/engine/peer": 2,
	"internal/engine/propose": 2, "internal/audit": 2, "internal/slotstore/watch": 2,
	"internal/engine/fsm": 3, "internal/engine/controller/policy": 3, "internal/engine/controller/balance": 3, "internal/engine/controller/tasks": 3,
	"internal/engine/projector": 3, "internal/engine/history": 3, "internal/engine/waker": 3, "internal/engine/nodemetrics": 3, "internal/engine/ctrlrecovery": 3,
	"internal/engine/replicas": 4, "internal/engine/controller/leader": 4, "internal/engine/backupjob": 4, "internal/engine/restore": 4,
	"internal/engine/dispatch": 5, "internal/sim": 5,
	"internal/engine/cluster": 6, "internal/httpapi": 6, "internal/console": 6,
	"cmd/server": 7, "cmd/slotsim": 7,
}

func TestPackagesImportOnlyLowerLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./internal/...", "./cmd/server", "./cmd/slotsim", "./web", "./migrations").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], "github.com/slotmeta/slotmeta/")
		switch {
		case strings.HasPrefix(pkg, "internal/chaos"), strings.HasPrefix(pkg, "internal/e2e"), strings.HasPrefix(pkg, "internal/contract"),
			pkg == "internal/nethost", pkg == "internal/testutil", pkg == "internal/testkit/faults", pkg == "internal/testkit/slotstoretest", pkg == "internal/testkit/operatortest":
			continue // tests and test support: they may use anything
		}
		layer, ok := layers[pkg]
		if !ok {
			t.Errorf("%s is not in the picture of docs/design.md §14 (layers in deps_test.go)", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, "github.com/slotmeta/slotmeta/")
			if !ours {
				continue
			}
			if l, known := layers[dep]; !known || l >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point to lower layers only", pkg, layer, dep, l)
			}
		}
	}
}

// The Go client is what other modules import: client and client/routed
// depend on no package of the server (nothing internal, no engine), so an
// app server that imports them builds only the client.
func TestClientStandsAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "./client", "./client/routed").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		ours, found := strings.CutPrefix(dep, "github.com/slotmeta/slotmeta/")
		if found && ours != "client" && ours != "client/routed" || strings.Contains(dep, "dragonboat") || strings.Contains(dep, "pebble") {
			t.Errorf("the client depends on %s", dep)
		}
	}
}

// TestDesignPackagePictureIsTrue (issue 53: docs that cannot drift): the
// layer picture and the import table of docs/design.md §14 say what the
// code does — the picture's layers are the ones above, and each row of
// the table names exactly the packages of ours its packages import (the
// domain types, package slotstore, aside; a parenthesis is a remark).
func TestDesignPackagePictureIsTrue(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	b, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	sec := doc[strings.Index(doc, "\n## 14. Packages"):]
	if end := strings.Index(sec[1:], "\n## "); end >= 0 {
		sec = sec[:end+1]
	}
	full := func(name string) string { // a short name of §14 as an import path
		for _, p := range []string{"internal/slotstore/" + name, "internal/engine/" + name, "internal/testkit/" + name, "internal/" + name, name} {
			if _, ok := layers[p]; ok {
				return p
			}
		}
		t.Errorf("§14 names %q, which is no package of the layers", name)
		return name
	}

	// The picture: "N  pkg   pkg …" lines of its second code block.
	picture := map[string]int{}
	line := regexp.MustCompile(`(?m)^ ?(\d) {2}(.+)$`)
	for _, m := range line.FindAllStringSubmatch(sec, -1) {
		n, _ := strconv.Atoi(m[1])
		for _, name := range strings.Fields(m[2]) {
			picture[full(name)] = n
		}
	}
	for pkg, l := range layers {
		if got, ok := picture[pkg]; !ok || got != l {
			t.Errorf("§14's picture puts %s in layer %d (%v); the code, in %d", pkg, got, ok, l)
		}
	}

	// The table: "| pkg[, pkg] | imports (remark) |".
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	imports := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		pkg := strings.TrimPrefix(f[0], "github.com/slotmeta/slotmeta/")
		for _, imp := range f[1:] {
			if dep, ours := strings.CutPrefix(imp, "github.com/slotmeta/slotmeta/"); ours && dep != "internal/slotstore" {
				imports[pkg] = append(imports[pkg], dep)
			}
		}
	}
	row := regexp.MustCompile(`(?m)^\| ([a-z/, ]+) \| ([^|]*) \|$`)
	rows := 0
	for _, m := range row.FindAllStringSubmatch(sec, -1) {
		if m[1] == "package" {
			continue
		}
		rows++
		listed, _, _ := strings.Cut(m[2], "(")
		var want []string
		for _, name := range strings.Split(listed, ",") {
			if name = strings.TrimSpace(name); name != "" {
				want = append(want, full(name))
			}
		}
		slices.Sort(want)
		for _, name := range strings.Split(m[1], ",") {
			pkg := full(strings.TrimSpace(name))
			got := slices.Clone(imports[pkg])
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("§14's table says %s imports %v; it imports %v", pkg, want, got)
			}
		}
	}
	if rows < 10 {
		t.Fatalf("§14's import table has %d rows: the test no longer finds it", rows)
	}
}

// TestTreesPointInward (issue 53): the domain (internal/slotstore and
// below) imports nothing of ours outside it (the module's root package
// included); the engine (internal/engine) is imported only by itself, the
// commands, the simulator and the test kit; the test kit
// (internal/testkit) only by itself and tests. Test files' imports are not
// a package's (go list's Imports).
func TestTreesPointInward(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	under := func(pkg, tree string) bool { return pkg == tree || strings.HasPrefix(pkg, tree+"/") }
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		pkg := strings.TrimPrefix(f[0], "github.com/slotmeta/slotmeta/")
		for _, imp := range f[1:] {
			dep, ours := strings.CutPrefix(imp, "github.com/slotmeta/slotmeta/")
			if imp == "github.com/slotmeta/slotmeta" {
				dep, ours = "(the module's root)", true
			}
			switch {
			case !ours:
			case under(pkg, "internal/slotstore") && !under(dep, "internal/slotstore"):
				t.Errorf("the domain's %s imports %s", pkg, dep)
			case under(dep, "internal/engine") && !under(pkg, "internal/engine") && !under(pkg, "cmd") && pkg != "internal/sim" && !under(pkg, "internal/testkit"):
				t.Errorf("%s imports the engine's %s", pkg, dep)
			case under(dep, "internal/testkit") && !under(pkg, "internal/testkit"):
				t.Errorf("%s imports the test kit's %s outside its tests", pkg, dep)
			}
		}
	}
}
