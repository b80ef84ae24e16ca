package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"slotmeta/internal/slotstore"
)

func mustNew(t *testing.T) *Authenticator {
	t.Helper()
	a, err := New(map[string]Role{
		"read-token-0123456789":  RoleRead,
		"write-token-0123456789": RoleWrite,
		"admin-token-0123456789": RoleAdmin,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func req(method, path, header string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	if header != "" {
		r.Header.Set("Authorization", header)
	}
	return r
}

func TestRequire(t *testing.T) {
	a := mustNew(t)
	for _, tc := range []struct {
		method, path, auth string
		want               slotstore.Code
	}{
		{"GET", "/v1/kv/k", "", slotstore.CodeUnauthenticated},
		{"GET", "/v1/kv/k", "Bearer wrong-token-0123456789", slotstore.CodeUnauthenticated},
		{"GET", "/v1/kv/k", "Basic read-token-0123456789", slotstore.CodeUnauthenticated},
		{"GET", "/v1/kv/k", "Bearer read-token-0123456789", ""},
		{"PUT", "/v1/kv/k", "Bearer read-token-0123456789", slotstore.CodePermissionDenied},
		{"PUT", "/v1/kv/k", "Bearer write-token-0123456789", ""},
		{"PUT", "/v1/kv/k", "bearer admin-token-0123456789", ""},
		{"POST", "/v1/cluster/groups/1/leader-transfer", "Bearer write-token-0123456789", slotstore.CodePermissionDenied},
		{"POST", "/v1/cluster/groups/1/leader-transfer", "Bearer admin-token-0123456789", ""},
		{"GET", "/v1/cluster/groups", "Bearer read-token-0123456789", ""},
		{"POST", "/v1/cluster/routes/resolve", "Bearer read-token-0123456789", ""},
		{"GET", "/healthz", "", ""},
		{"GET", "/readyz", "", ""},
		{"GET", "/openapi.yaml", "", ""},
		{"GET", "/metrics", "", slotstore.CodeUnauthenticated},
	} {
		r := req(tc.method, tc.path, tc.auth)
		err := a.Require(r, RequiredRole(r))
		if got := slotstore.ErrorCode(err); got != tc.want {
			t.Errorf("%s %s with %q: %v, want %q", tc.method, tc.path, tc.auth, err, tc.want)
		}
	}
	// The console cookie carries a token too.
	r := req("PUT", "/v1/kv/k", "")
	r.AddCookie(&http.Cookie{Name: CookieName, Value: "write-token-0123456789"})
	if err := a.Require(r, RoleWrite); err != nil {
		t.Fatalf("cookie token: %v", err)
	}
}

func TestOffWithoutTokens(t *testing.T) {
	a, err := New(nil)
	if err != nil || a.Enabled() {
		t.Fatalf("empty authenticator: %v %v", a.Enabled(), err)
	}
	if err := a.Require(req("POST", "/v1/cluster/nodes", ""), RoleAdmin); err != nil {
		t.Fatalf("checking must be off without tokens: %v", err)
	}
}

func TestParse(t *testing.T) {
	m, err := Parse(strings.NewReader("# ops\nadmin  admin-token-0123456789\n\nread read-token-0123456789\n"))
	if err != nil || len(m) != 2 || m["admin-token-0123456789"] != RoleAdmin {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"root tok-0123456789012345", "admin", "admin a b", "read x-0123456789012345\nwrite x-0123456789012345"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	env, err := ParseEnv("admin:admin-token-0123456789, read:read-token-0123456789")
	if err != nil || env["read-token-0123456789"] != RoleRead {
		t.Fatalf("%v %v", env, err)
	}
	if _, err := ParseEnv("nocolon"); err == nil {
		t.Fatal("a malformed env entry parsed")
	}
	if _, err := New(map[string]Role{"short": RoleAdmin}); err == nil {
		t.Fatal("a short token was accepted")
	}
}
