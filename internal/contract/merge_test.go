package contract

import (
	"strings"
	"testing"
)

// TestFragmentsMerge checks how openapi.d fragments join the spec: new
// paths, operations and components are added and then checked like the
// rest; a repeat of what is there is accepted; a different definition of
// something already there is an error.
func TestFragmentsMerge(t *testing.T) {
	_, root := contractSpec(t)
	frag, err := parseYAML("groups.yaml", []byte(`
paths:
  /v1/contract-fragment-probe:
    get:
      tags: [cluster]
      operationId: contractFragmentProbe
      responses:
        200:
          description: Probe.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/ProbeFragment'
        default:
          $ref: '#/components/responses/Error'
  /v1/users/{uid}:
    parameters:
      - $ref: '#/components/parameters/UID'
components:
  schemas:
    ProbeFragment:
      type: object
      required: [ok]
      properties:
        ok: {type: boolean}
tags:
  - name: probes
    description: Added by a fragment.
`))
	if err != nil {
		t.Fatal(err)
	}
	merged := cloneRaw(root)
	if err := mergeFragment(merged, frag); err != nil {
		t.Fatalf("merge: %v", err)
	}
	s, err := newSpec(merged)
	if err != nil {
		t.Fatalf("merged spec: %v", err)
	}
	ops := strings.Join(s.operations(), "\n")
	if !strings.Contains(ops, "GET /v1/contract-fragment-probe") || !strings.Contains(ops, "GET /v1/users/{uid}") {
		t.Fatalf("merged operations:\n%s", ops)
	}
	if err := s.checkRoutes(apiHandler(t)); err == nil || !strings.Contains(err.Error(), "GET /v1/contract-fragment-probe is in the spec but not served") {
		t.Fatalf("a fragment's path is not held to the router: %v", err)
	}

	conflict, err := parseYAML("kv.yaml", []byte(`
components:
  schemas:
    KV:
      type: object
      properties:
        key: {type: integer}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := mergeFragment(cloneRaw(root), conflict); err == nil || !strings.Contains(err.Error(), "KV") {
		t.Fatalf("a fragment redefining KV: %v", err)
	}
	if err := mergeFragment(cloneRaw(root), map[string]any{"webhooks": map[string]any{}}); err == nil {
		t.Fatal("a fragment with an unexpected key merges")
	}
}
