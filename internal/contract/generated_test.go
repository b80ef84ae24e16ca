package contract

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestGeneratedClientIsFresh regenerates the client from openapi.yaml into a
// temporary file and compares it with the committed client/client.gen.go:
// a spec change without `make generate` fails here. It runs the oapi-codegen
// recorded as a tool in go.mod (`go tool`), so it needs no network.
func TestGeneratedClientIsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs oapi-codegen")
	}
	// The same configuration, writing elsewhere (its output wins over -o).
	cfg, err := os.ReadFile("../../client/oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "client.gen.go")
	outLine := regexp.MustCompile(`(?m)^output: .*$`)
	if !outLine.Match(cfg) {
		t.Fatal("client/oapi-codegen.yaml has no top-level output: line")
	}
	cfgPath := filepath.Join(dir, "oapi-codegen.yaml")
	if err := os.WriteFile(cfgPath, outLine.ReplaceAll(cfg, []byte("output: "+out)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", cfgPath, "../openapi.yaml")
	cmd.Dir = "../../client"
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../client/client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatal("client/client.gen.go is not what openapi.yaml generates: run `make generate`")
	}
}
