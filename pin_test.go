package slotmeta

import (
	"os"
	"regexp"
	"testing"
)

// dragonboat v4 builds only against this pebble; our own store uses
// github.com/cockroachdb/pebble/v2. `go get -u ./...` would move the pin and
// break the build in dragonboat's internal/vfs.
const dragonboatPebblePin = "v0.0.0-20221207173255-0f086d933dac"

func TestDragonboatPebblePin(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/cockroachdb/pebble (\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/cockroachdb/pebble (dragonboat's LogDB)")
	}
	if got := string(m[1]); got != dragonboatPebblePin {
		t.Fatalf("github.com/cockroachdb/pebble is at %s; dragonboat v4 needs %s", got, dragonboatPebblePin)
	}
}

func TestOpenAPIEmbedded(t *testing.T) {
	if !regexp.MustCompile(`(?m)^openapi: 3`).Match(OpenAPI) {
		t.Fatal("openapi.yaml is not an OpenAPI 3 document")
	}
}

// dragonboatPin is the dragonboat version whose internal constructors we
// reach by name (go:linkname): its default LogDB (ADR 0006) and its TCP
// transport (ADR 0004, ADR 0007). A new version must have those signatures
// checked before this pin moves.
const dragonboatPin = "v4.0.0-20250723143628-076c7f6497dc"

func TestDragonboatPin(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/lni/dragonboat/v4 (\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/lni/dragonboat/v4")
	}
	if got := string(m[1]); got != dragonboatPin {
		t.Fatalf("github.com/lni/dragonboat/v4 is at %s; the go:linkname targets were checked against %s", got, dragonboatPin)
	}
}
