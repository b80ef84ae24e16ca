package contract

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

const (
	readToken  = "contract-read-0123456789"
	writeToken = "contract-write-0123456789"
	adminToken = "contract-admin-0123456789"
)

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// TestContractWithTokens: a node with API tokens, every exchange validated
// against the spec with its security requirement applied — public paths
// without a token, the rest with `Authorization: Bearer …` of each role.
func TestContractWithTokens(t *testing.T) {
	s, _ := contractSpec(t)
	s.tokens = true
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 4})
	authn, err := auth.New(map[string]auth.Role{readToken: auth.RoleRead, writeToken: auth.RoleWrite, adminToken: auth.RoleAdmin})
	must(t, err)
	n := &node{t: t, spec: s, backend: c.Nodes[0]}
	cfg := apiConfig(n.backend)
	cfg.Auth = authn
	n.handler, n.url = n.serve(cfg)
	n.tr = &validatingTransport{t: t, spec: s}
	n.client = &http.Client{Transport: n.tr, Timeout: 20 * time.Second}

	// Public: no token.
	for _, p := range []string{"/healthz", "/readyz", "/openapi.yaml", "/docs"} {
		n.do(200, req{method: "GET", path: p})
	}
	// No token where one is needed: the server and the spec refuse it.
	for _, r := range []req{
		{method: "GET", path: "/v1/users"},
		{method: "GET", path: "/metrics"},
		{method: "PUT", path: "/v1/kv/a", body: `{"value":"1"}`},
		{method: "GET", path: "/v1/cluster"},
	} {
		r.refused = true
		got := n.do(401, r)
		if got.errCode() != "unauthenticated" || got.header.Get("WWW-Authenticate") != `Bearer realm="slotmeta"` {
			t.Fatalf("%s %s without a token: %s %v", r.method, r.path, got.body, got.header)
		}
	}
	// A token the server does not know: the spec sees a bearer token, the
	// server refuses it.
	n.do(401, req{method: "GET", path: "/v1/users", headers: bearer("not-a-configured-token")})

	// read < write < admin.
	n.do(200, req{method: "GET", path: "/v1/users", headers: bearer(readToken)})
	n.do(200, req{method: "GET", path: "/metrics", headers: bearer(readToken)})
	if r := n.do(403, req{method: "PUT", path: "/v1/kv/a", body: `{"value":"1"}`, headers: bearer(readToken)}); r.errCode() != "permission_denied" {
		t.Fatalf("a write with a read token: %s", r.body)
	}
	n.do(200, req{method: "PUT", path: "/v1/kv/a", body: `{"value":"1"}`, headers: bearer(writeToken)})
	n.do(200, req{method: "GET", path: "/v1/kv/a", headers: bearer(writeToken)})
	n.do(200, req{method: "POST", path: "/v1/cluster/routes/resolve", body: `{"keys":["a"]}`, headers: bearer(readToken)})

	self := c.Nodes[0].Controller().Nodes[1]
	body, err := json.Marshal(map[string]any{"id": 1, "raft_addr": self.RaftAddr, "api_addr": self.APIAddr, "peer_addr": self.PeerAddr})
	must(t, err)
	n.do(403, req{method: "POST", path: "/v1/cluster/nodes", body: string(body), headers: bearer(writeToken)})
	n.do(200, req{method: "POST", path: "/v1/cluster/nodes", body: string(body), headers: bearer(adminToken)})
	n.do(200, req{method: "GET", path: "/v1/cluster/nodes", headers: bearer(adminToken)})
}

// specParam matches a path parameter of the spec, {uid}.
var specParam = regexp.MustCompile(`\{[^}]+\}`)

// TestSpecSecurityMatchesRequiredRole holds each operation's security to
// the server's: public operations (auth.RequiredRole none) say
// `security: []`; every other one keeps the global bearer requirement and
// names in x-required-role the role the server requires.
func TestSpecSecurityMatchesRequiredRole(t *testing.T) {
	s, _ := contractSpec(t)
	if len(s.doc.Security) != 1 || len(s.doc.Security[0]) != 1 || s.doc.Security[0]["bearerAuth"] == nil {
		t.Fatalf("global security: %+v, want bearerAuth", s.doc.Security)
	}
	if ref := s.doc.Components.SecuritySchemes["bearerAuth"]; ref == nil || ref.Value.Type != "http" || ref.Value.Scheme != "bearer" {
		t.Fatalf("securitySchemes.bearerAuth: %+v", ref)
	}
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			r, err := http.NewRequest(method, specParam.ReplaceAllString(path, "1"), nil)
			must(t, err)
			want := auth.RequiredRole(r)
			public := op.Security != nil && len(*op.Security) == 0
			role, _ := op.Extensions["x-required-role"].(string)
			switch {
			case want == auth.RoleNone && (!public || role != ""):
				t.Errorf("%s %s needs no token: want security: [] and no x-required-role", method, path)
			case want != auth.RoleNone && (op.Security != nil || role != want.String()):
				t.Errorf("%s %s: x-required-role %q (own security %v), the server requires %s", method, path, role, op.Security, want)
			}
		}
	}
}
