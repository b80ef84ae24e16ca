package slotmeta

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinkedSymbolsKeepTheirSignatures: go:linkname does not type-check —
// a dragonboat function whose signature changed would still link and then
// misbehave. Every function we reach by name is declared with the
// signature it has in the dragonboat source of go.mod's version (the
// module cache), parameter and result types compared with their import
// paths.
func TestLinkedSymbolsKeepTheirSignatures(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/lni/dragonboat/v4").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dragonboat := strings.TrimSpace(string(out))
	for _, c := range []struct {
		ours, name, theirs string
	}{
		{"internal/slotstore/raftnet/heard.go", "newTCPTransport", "internal/transport/tcp.go"},
		{"internal/slotstore/faults/tcp.go", "newTCPTransport", "internal/transport/tcp.go"},
		{"internal/slotstore/raftlog/logdb.go", "newDefaultLogDB", "internal/logdb/logdb.go"},
	} {
		ourSig, target := signature(t, c.ours, c.name, true)
		theirName := target[strings.LastIndex(target, ".")+1:]
		theirSig, _ := signature(t, filepath.Join(dragonboat, c.theirs), theirName, false)
		if ourSig != theirSig {
			t.Errorf("%s: %s is declared %s; dragonboat's %s is %s", c.ours, c.name, ourSig, target, theirSig)
		}
		if !strings.HasPrefix(target, "github.com/lni/dragonboat/v4/"+filepath.Dir(c.theirs)+".") {
			t.Errorf("%s: %s links to %s, not to %s", c.ours, c.name, target, c.theirs)
		}
	}
}

// signature returns the parameter and result types of function name in
// file, with package names replaced by import paths; with linked, also the
// target of its go:linkname directive.
func signature(t *testing.T, file, name string, linked bool) (sig, target string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]string{}
	for _, im := range f.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		alias := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			alias = im.Name.Name
		}
		imports[alias] = path
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != name || fn.Recv != nil {
			continue
		}
		if linked {
			for _, c := range fn.Doc.List {
				if rest, ok := strings.CutPrefix(c.Text, "//go:linkname "+name+" "); ok {
					target = strings.TrimSpace(rest)
				}
			}
			if target == "" {
				t.Fatalf("%s: %s has no go:linkname directive", file, name)
			}
		}
		types := func(fl *ast.FieldList) string {
			if fl == nil {
				return ""
			}
			var parts []string
			for _, field := range fl.List {
				ast.Inspect(field.Type, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] != "" {
							id.Name = imports[id.Name]
						}
					}
					return true
				})
				var b bytes.Buffer
				_ = printer.Fprint(&b, fset, field.Type)
				for range max(len(field.Names), 1) {
					parts = append(parts, b.String())
				}
			}
			return strings.Join(parts, ", ")
		}
		return "(" + types(fn.Type.Params) + ") (" + types(fn.Type.Results) + ")", target
	}
	t.Fatalf("%s: no function %s", file, name)
	return "", ""
}
