package contract

import (
	"fmt"
	"strings"
	"testing"
)

// driftFixture is a deliberately wrong copy of the spec: a change of the
// spec that the real node's behaviour no longer matches.
type driftFixture struct {
	name   string
	mutate func(t *testing.T, raw rawSpec)
	// want is a fragment of the mismatch the checker must report.
	want string
}

// at walks raw down keys and returns the mapping there.
func at(t *testing.T, raw rawSpec, keys ...string) map[string]any {
	t.Helper()
	cur := map[string]any(raw)
	for _, k := range keys {
		next, ok := cur[k].(map[string]any)
		if !ok {
			t.Fatalf("drift fixture: the spec has no %s", strings.Join(keys, "."))
		}
		cur = next
	}
	return cur
}

var driftFixtures = []driftFixture{
	{
		name: "response schema: User.created_at_ms becomes a string",
		mutate: func(t *testing.T, raw rawSpec) {
			at(t, raw, "components", "schemas", "User", "properties")["created_at_ms"] = map[string]any{"type": "string"}
		},
		want: "created_at_ms",
	},
	{
		name: "request schema: KVWrite.value at most 1 byte",
		mutate: func(t *testing.T, raw rawSpec) {
			at(t, raw, "components", "schemas", "KVWrite", "properties", "value")["maxLength"] = 1
		},
		want: "request",
	},
	{
		name: "error schema: ErrorCode loses not_found",
		mutate: func(t *testing.T, raw rawSpec) {
			ec := at(t, raw, "components", "schemas", "ErrorCode")
			var keep []any
			for _, c := range ec["enum"].([]any) {
				if c != "not_found" {
					keep = append(keep, c)
				}
			}
			ec["enum"] = keep
		},
		want: "not_found",
	},
	{
		name: "headers: the ETag of GET /v1/kv/{key} is no longer declared",
		mutate: func(t *testing.T, raw rawSpec) {
			delete(at(t, raw, "paths", "/v1/kv/{key}", "get", "responses", "200", "headers"), "ETag")
		},
		want: "Etag is not declared",
	},
	{
		name: "headers: a retryable error must not send Retry-After",
		mutate: func(t *testing.T, raw rawSpec) {
			delete(at(t, raw, "components", "responses", "KeyedUnavailable", "headers"), "Retry-After")
		},
		want: "Retry-After is not declared",
	},
	{
		name: "headers: a header the node never sends becomes required",
		mutate: func(t *testing.T, raw rawSpec) {
			at(t, raw, "paths", "/v1/users/{uid}", "get", "responses", "200", "headers")["X-Shard"] = map[string]any{
				"required": true, "schema": map[string]any{"type": "string"},
			}
		},
		want: "X-Shard",
	},
	{
		name: "status: 412 is no longer an answer of PUT /v1/kv/{key}, and there is no default",
		mutate: func(t *testing.T, raw rawSpec) {
			responses := at(t, raw, "paths", "/v1/kv/{key}", "put", "responses")
			delete(responses, "412")
			delete(responses, "default")
		},
		want: "status is not supported",
	},
	{
		name: "route removed: /v1/kv/{key}",
		mutate: func(t *testing.T, raw rawSpec) {
			delete(at(t, raw, "paths"), "/v1/kv/{key}")
		},
		want: "no operation of the spec",
	},
}

// TestContractDetectsDrift proves the checker is not vacuous: for each
// deliberately wrong copy of the spec, replaying the exchanges of a real
// walk (which match the true spec) through the same checker must report
// the mismatch. The route check must likewise report a route removed from
// the spec and an operation the router does not serve, and loading must
// refuse a spec that is itself broken.
func TestContractDetectsDrift(t *testing.T) {
	n := startNode(t)
	n.do(201, req{method: "POST", path: "/v1/users", body: `{"uid":"ada","name":"Ada"}`})
	n.do(200, req{method: "GET", path: "/v1/users/ada"})
	n.do(404, req{method: "GET", path: "/v1/users/nobody"})
	etag := n.do(200, req{method: "PUT", path: "/v1/kv/k", body: `{"value":"v1"}`}).header.Get("ETag")
	n.do(200, req{method: "GET", path: "/v1/kv/k"})
	n.do(412, req{method: "PUT", path: "/v1/kv/k", body: `{"value":"v2"}`, headers: []string{"If-Match", `"999999"`}})
	n.do(200, req{method: "PUT", path: "/v1/kv/k", body: `{"value":"v2"}`, headers: []string{"If-Match", etag}})
	cfg := apiConfig(n.backend)
	cfg.RequestTimeout = 1 // ns: the deadline has passed before the node answers
	_, expired := n.serve(cfg)
	n.do(503, req{base: expired, method: "PUT", path: "/v1/kv/k", body: `{"value":"late"}`})
	recorded := n.tr.seen()
	if t.Failed() {
		t.Fatal("the walk does not match the true spec; drift cannot be told apart")
	}

	_, raw := contractSpec(t)
	for _, f := range driftFixtures {
		t.Run(f.name, func(t *testing.T) {
			wrong := cloneRaw(raw)
			f.mutate(t, wrong)
			s, err := newSpec(wrong)
			if err != nil {
				t.Fatalf("the drifted spec does not load: %v", err)
			}
			var found []string
			for _, e := range recorded {
				if err := s.check(e); err != nil {
					found = append(found, fmt.Sprintf("%v: %v", e, err))
				}
			}
			report := strings.Join(found, "\n")
			if !strings.Contains(report, f.want) {
				t.Fatalf("the checker does not report the drift (want %q); it reports:\n%s", f.want, report)
			}
			t.Logf("reported as expected:\n%s", firstLines(report, 3))
		})
	}

	h := apiHandler(t)
	t.Run("route removed from the spec is reported as served but not specified", func(t *testing.T) {
		wrong := cloneRaw(raw)
		delete(at(t, wrong, "paths"), "/v1/kv/{key}")
		s, err := newSpec(wrong)
		if err != nil {
			t.Fatal(err)
		}
		err = s.checkRoutes(h)
		if err == nil || !strings.Contains(err.Error(), "PUT /v1/kv/{key} is served but not in the spec") {
			t.Fatalf("checkRoutes: %v", err)
		}
	})
	t.Run("operation the router lacks is reported as specified but not served", func(t *testing.T) {
		wrong := cloneRaw(raw)
		at(t, wrong, "paths")["/v1/ghosts"] = map[string]any{"get": map[string]any{
			"operationId": "listGhosts",
			"responses":   map[string]any{"200": map[string]any{"description": "Never served."}},
		}}
		s, err := newSpec(wrong)
		if err != nil {
			t.Fatal(err)
		}
		err = s.checkRoutes(h)
		if err == nil || !strings.Contains(err.Error(), "GET /v1/ghosts is in the spec but not served") {
			t.Fatalf("checkRoutes: %v", err)
		}
	})
	t.Run("a broken spec does not load", func(t *testing.T) {
		wrong := cloneRaw(raw)
		at(t, wrong, "components", "schemas", "User", "properties")["name"] = map[string]any{"$ref": "#/components/schemas/Nope"}
		if _, err := newSpec(wrong); err == nil {
			t.Fatal("a spec with a dangling $ref loads")
		}
	})
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}
