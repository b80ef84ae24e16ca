package httpapi

import (
	"bytes"
	"os"
	"testing"
)

// TestStatusTableInSpec holds the error table to openapi.yaml: each code of
// statusOf is in the contract's ErrorCode enum. The routes, requests and
// responses are held to the contract by internal/contract, on a real node.
func TestStatusTableInSpec(t *testing.T) {
	spec, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for code := range statusOf {
		if !bytes.Contains(spec, []byte("\n        - "+string(code)+"\n")) {
			t.Errorf("openapi.yaml's ErrorCode lacks %s", code)
		}
	}
}
