package slotmeta

import (
	"os/exec"
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
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/lni/dragonboat") || strings.HasPrefix(dep, "github.com/cockroachdb/pebble") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
