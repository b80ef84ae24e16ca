package contract

import (
	"encoding/json"
	"os"
	"testing"
)

// mergedSpecEnv names the file TestWriteMergedSpec writes: `make lint-spec`
// sets it to lint the fragments of openapi.d before they are merged.
const mergedSpecEnv = "SLOTMETA_WRITE_MERGED_SPEC"

// TestWriteMergedSpec writes openapi.yaml with the openapi.d fragments
// merged in, as JSON, to $SLOTMETA_WRITE_MERGED_SPEC.
func TestWriteMergedSpec(t *testing.T) {
	path := os.Getenv(mergedSpecEnv)
	if path == "" {
		t.Skip(mergedSpecEnv + " is not set")
	}
	contractSpec(t) // loads and validates
	raw, _, err := loadRawSpec()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
