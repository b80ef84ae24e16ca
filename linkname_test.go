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
		{"internal/engine/raftnet/heard.go", "newTCPTransport", "internal/transport/tcp.go"},
		{"internal/testkit/faults/tcp.go", "newTCPTransport", "internal/transport/tcp.go"},
		{"internal/engine/raftlog/logdb.go", "newDefaultLogDB", "internal/logdb/logdb.go"},
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

// TestLinkedVariablesKeepTheirTypes: the per-replica sizes
// (internal/engine/raftlog/sizes.go) are dragonboat's package variables,
// reached by name. Each must still be a package-level uint64 of the file
// named here in the pinned source, initialised from a uint64 setting.
func TestLinkedVariablesKeepTheirTypes(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/lni/dragonboat/v4").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dragonboat := strings.TrimSpace(string(out))
	settings := settingTypes(t, filepath.Join(dragonboat, "internal/settings"))
	const ours = "internal/engine/raftlog/sizes.go"
	linked := linkedVars(t, ours)
	theirs := map[string]string{ // target → file that declares it
		"github.com/lni/dragonboat/v4.incomingProposalsMaxLen":              "node.go",
		"github.com/lni/dragonboat/v4.incomingReadIndexMaxLen":              "node.go",
		"github.com/lni/dragonboat/v4.receiveQueueLen":                      "nodehost.go",
		"github.com/lni/dragonboat/v4.pendingProposalShards":                "request.go",
		"github.com/lni/dragonboat/v4/internal/raft.entrySliceSize":         "internal/raft/inmemory.go",
		"github.com/lni/dragonboat/v4/internal/raft.minEntrySliceSize":      "internal/raft/inmemory.go",
		"github.com/lni/dragonboat/v4/internal/transport.perConnBufSize":    "internal/transport/tcp.go",
		"github.com/lni/dragonboat/v4/internal/transport.payloadBufferSize": "internal/transport/tcp.go",
	}
	if len(linked) != len(theirs) {
		t.Errorf("%s links %d variables, the test knows %d: %v", ours, len(linked), len(theirs), linked)
	}
	for name, target := range linked {
		file, ok := theirs[target]
		if !ok {
			t.Errorf("%s: %s links to %s, which the test does not know", ours, name, target)
			continue
		}
		if got := varType(t, filepath.Join(dragonboat, file), target[strings.LastIndex(target, ".")+1:], settings); got != "uint64" {
			t.Errorf("%s: dragonboat's %s is %s, not uint64", ours, target, got)
		}
	}
}

// linkedVars maps each go:linkname'd uint64 variable of file to its target.
func linkedVars(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR || gd.Doc == nil {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for _, c := range gd.Doc.List {
				if rest, ok := strings.CutPrefix(c.Text, "//go:linkname "+vs.Names[0].Name+" "); ok {
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "uint64" {
						t.Errorf("%s: %s is not declared uint64", file, vs.Names[0].Name)
					}
					out[vs.Names[0].Name] = strings.TrimSpace(rest)
				}
			}
		}
	}
	return out
}

// settingTypes are the types of dragonboat's settings: "Soft.X" for the
// fields of its soft settings, "X" for its package-level variables.
func settingTypes(t *testing.T, dir string) map[string]string {
	t.Helper()
	types := map[string]string{}
	for _, name := range []string{"soft.go", "hard.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok && n.Name.Name == "soft" {
					for _, fl := range st.Fields.List {
						for _, nm := range fl.Names {
							types["Soft."+nm.Name] = exprString(fl.Type)
						}
					}
				}
			case *ast.ValueSpec:
				if n.Type != nil {
					for _, nm := range n.Names {
						types[nm.Name] = exprString(n.Type)
					}
				}
			}
			return true
		})
	}
	return types
}

// varType is the type of package-level variable name in file: its declared
// type, or that of the setting it is initialised from (settings.Soft.X, or
// an expression starting with settings.X).
func varType(t *testing.T, file, name string, settings map[string]string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, nm := range vs.Names {
				if nm.Name != name {
					continue
				}
				if vs.Type != nil {
					return exprString(vs.Type)
				}
				v := vs.Values[i]
				if b, ok := v.(*ast.BinaryExpr); ok {
					v = b.X
				}
				s := exprString(v)
				if rest, ok := strings.CutPrefix(s, "settings."); ok && settings[rest] != "" {
					return settings[rest]
				}
				return "unknown (initialised from " + s + ")"
			}
		}
	}
	return "missing"
}

func exprString(e ast.Expr) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, token.NewFileSet(), e)
	return b.String()
}
