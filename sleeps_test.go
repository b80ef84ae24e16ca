package slotmeta

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// maxTestSleeps bounds the time.Sleep calls of the tests. A test waits for
// a condition with testutil.WaitUntil, WaitFor or Eventually (which say
// where things stood when they time out), never with a sleep: a sleep long
// enough on a loaded machine is too long everywhere else, and one short
// enough is a flaky test. What stays are holds (writes flowing for a set
// time under a fault), a client's pacing of its retries, and a server made
// slow on purpose, each saying which it is.
const maxTestSleeps = 39

// TestTestsSleepLittle counts the calls of time.Sleep in every _test.go
// file of the repository (comments do not count).
func TestTestsSleepLittle(t *testing.T) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information: cannot find the repository")
	}
	repo := filepath.Dir(self)
	fset := token.NewFileSet()
	var sleeps []string
	err := filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repo && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sleep" {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" {
					rel, _ := filepath.Rel(repo, path)
					sleeps = append(sleeps, rel+":"+strconv.Itoa(fset.Position(call.Pos()).Line))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sleeps) > maxTestSleeps {
		t.Errorf("the tests call time.Sleep %d times, more than %d: wait for a condition with testutil.WaitUntil/WaitFor/Eventually instead\n%s",
			len(sleeps), maxTestSleeps, strings.Join(sleeps, "\n"))
	}
	t.Logf("%d calls of time.Sleep in tests (at most %d)", len(sleeps), maxTestSleeps)
}
