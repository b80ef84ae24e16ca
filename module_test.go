package slotmeta

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// TestClientIsGettable: another module fetches the Go clients (the generated
// one and the route-aware one) with `go get`,
// as a user's app server would — no replace directive, no copied go.sum.
//
// The module is published, at a pseudo-version, to a module proxy in a
// temporary directory (the layout GOPROXY=file:// reads: list, .info, .mod,
// .zip), made of the files git would commit; its dependencies come from the
// machine's module download cache, which has that layout too. The consumer
// gets its own empty module cache, so nothing is read from this checkout and
// nothing is left behind. A module path go cannot fetch (one without a dot,
// as `slotmeta` was) fails here.
func TestClientIsGettable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	goEnv := func(name string) string {
		out, err := exec.Command(goBin, "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	path := modfile.ModulePath(data)
	if err := module.CheckPath(path); err != nil {
		t.Fatalf("the module path cannot be fetched: %v", err)
	}
	const version = "v0.0.0-20261204000000-000000000000"
	m := module.Version{Path: path, Version: version}

	root := t.TempDir()
	proxy := filepath.Join(root, "proxy")
	publish(t, proxy, m, data)

	consumer := filepath.Join(root, "app")
	if err := os.MkdirAll(consumer, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(consumer, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/app\n\ngo 1.26\n")
	write("main.go", `package main

import (
	"fmt"

	"`+path+`/client"
	"`+path+`/client/routed"
)

func main() {
	c, err := client.NewClientWithResponses("http://127.0.0.1:8080")
	fmt.Println(c != nil, err)
	r, err := routed.New(routed.Config{Endpoints: []string{"http://127.0.0.1:8080"}, NoRouteStream: true})
	fmt.Println(r != nil, err)
}
`)
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(goEnv("GOMODCACHE"), "cache", "download")),
		"GOMODCACHE="+filepath.Join(root, "modcache"),
		"GOFLAGS=-modcacherw",
		"GONOSUMDB="+path, "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local",
	)
	run := func(args ...string) {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = consumer, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// go get of the packages the app imports, as `go get` of an import
	// path does: it records their module and every go.sum line their build
	// needs. (go mod tidy would also want the modules the dependencies'
	// own tests import — testify for oapi-codegen/runtime's —, which a
	// machine's download cache need not hold: CI on a fresh machine failed
	// on them.)
	run("get", path+"/client@"+version, path+"/client/routed@"+version)
	run("build", "-o", filepath.Join(root, "app.bin"), ".")
	sum, err := os.ReadFile(filepath.Join(consumer, "go.sum"))
	if err != nil || !bytes.Contains(sum, []byte(path+" "+version)) {
		t.Fatalf("the consumer's go.sum does not name the module: %v\n%s", err, sum)
	}
}

// publish writes module m, made of the files git tracks or would track here,
// into a GOPROXY=file:// directory.
func publish(t *testing.T, proxy string, m module.Version, goMod []byte) {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	var files []modzip.File
	seen := map[string]bool{} // a file of an unfinished merge is listed once per stage
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if seen[name] {
			continue
		}
		seen[name] = true
		if info, err := os.Lstat(name); err == nil && info.Mode().IsRegular() {
			files = append(files, diskFile{name: filepath.ToSlash(name), info: info})
		}
	}
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	if err := modzip.Create(&z, m, files); err != nil {
		t.Fatalf("module zip: %v", err)
	}
	// The zip must hold what a fetch unpacks: check it reads back.
	if _, err := zip.NewReader(bytes.NewReader(z.Bytes()), int64(z.Len())); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"list":              []byte(m.Version + "\n"),
		m.Version + ".info": fmt.Appendf(nil, `{"Version":%q,"Time":"2026-12-04T00:00:00Z"}`, m.Version),
		m.Version + ".mod":  goMod,
		m.Version + ".zip":  z.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// diskFile is a file of this checkout as modzip.Create reads it.
type diskFile struct {
	name string
	info os.FileInfo
}

func (f diskFile) Path() string                 { return f.name }
func (f diskFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(filepath.FromSlash(f.name)) }
