package slotmeta

import (
	"cmp"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// maxMethods is the most methods one type under internal/ may declare (and
// the most cluster.Node, the node's facade, may export). A
// type past it serves too many concerns at once: split it by the concern or
// resource its methods handle, into small types that hold the shared state
// (httpapi's userRoutes and the other route families hold *api, fsm's
// userApplier and the other entity appliers hold *applier, console's page
// families hold *console).
const maxMethods = 40

// typeMethods is what one type of one package declares.
type typeMethods struct {
	pkg      string // the package's directory, relative to the repository
	typ      string
	methods  int
	exported int
}

// TestNoTypeDeclaresMoreThanMaxMethods parses every package under internal/
// (its non-test, non-generated files of this platform's build) and counts
// the methods declared on each receiver type.
func TestNoTypeDeclaresMoreThanMaxMethods(t *testing.T) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information: cannot find the repository")
	}
	repo := filepath.Dir(self)
	types := internalMethods(t, repo)
	for _, m := range types {
		if m.pkg == "internal/engine/cluster" && m.typ == "Node" && m.exported > maxMethods {
			// The facade: what it offers other packages is capped too.
			t.Errorf("%s: the node facade exports %d methods, more than %d: a concern of its own wants a type (see Operator, Testing)",
				m.pkg, m.exported, maxMethods)
		}
		if m.methods > maxMethods {
			t.Errorf("%s: type %s declares %d methods, more than %d: split it by the concern its methods handle",
				m.pkg, m.typ, m.methods, maxMethods)
		}
	}
	for _, m := range types[:min(len(types), 25)] {
		t.Logf("%4d  %s.%s", m.methods, m.pkg, m.typ)
	}
}

// internalMethods counts the methods of every type of every package under
// repo/internal, most methods first.
func internalMethods(t *testing.T, repo string) []typeMethods {
	t.Helper()
	var out []typeMethods
	err := filepath.WalkDir(filepath.Join(repo, "internal"), func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return filepath.SkipDir
		}
		files, err := packageFiles(dir)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repo, dir)
		if err != nil {
			return err
		}
		counts, exported := countMethods(files)
		for typ, n := range counts {
			out = append(out, typeMethods{pkg: filepath.ToSlash(rel), typ: typ, methods: n, exported: exported[typ]})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b typeMethods) int {
		return cmp.Or(cmp.Compare(b.methods, a.methods), cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.typ, b.typ))
	})
	return out
}

// packageFiles parses the files of dir that the package is built from on
// this platform, leaving out tests and generated code (templ's *_templ.go,
// the generated client: a "Code generated ... DO NOT EDIT." header).
func packageFiles(dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if match, err := build.Default.MatchFile(dir, name); err != nil || !match {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if !ast.IsGenerated(f) {
			files = append(files, f)
		}
	}
	return files, nil
}

// countMethods counts the methods declared on each receiver base type of
// files (one package), and how many of them are exported.
func countMethods(files []*ast.File) (all, exported map[string]int) {
	all, exported = map[string]int{}, map[string]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
				continue
			}
			typ := receiverType(fd.Recv.List[0].Type)
			all[typ]++
			if fd.Name.IsExported() {
				exported[typ]++
			}
		}
	}
	return all, exported
}

// receiverType is the name of a receiver's base type: T of T, *T, T[P] and
// *T[P, Q].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}

// The counter sees every receiver shape and leaves out tests and generated
// files.
func TestCountMethodsCountsEveryReceiverShape(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("p.go", `package p

type T struct{}
type G[K comparable, V any] struct{}
type H[K any] struct{}

func (T) A()        {}
func (*T) b()       {}
func (t *(T)) C()   {}
func (G[K, V]) D()  {}
func (*G[K, V]) e() {}
func (h *H[K]) F()  {}
func free()         {}
`)
	write("p_templ.go", "// Code generated by templ - DO NOT EDIT.\n\npackage p\n\nfunc (T) Generated() {}\n")
	write("p_test.go", "package p\n\nfunc (T) InATest() {}\n")
	files, err := packageFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	all, exported := countMethods(files)
	want := map[string][2]int{"T": {3, 2}, "G": {2, 1}, "H": {1, 1}}
	for typ, w := range want {
		if all[typ] != w[0] || exported[typ] != w[1] {
			t.Errorf("%s: %d methods (%d exported), want %d (%d)", typ, all[typ], exported[typ], w[0], w[1])
		}
	}
	if len(all) != len(want) {
		t.Errorf("counted types %v, want those of %v", all, want)
	}
}
