package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"slotmeta/internal/auth"
)

// TestAccessControl: every rule of the token check, through the real router.
func TestAccessControl(t *testing.T) {
	be := newFake(t, 4)
	authn, err := auth.New(map[string]auth.Role{
		"reader-0123456789abcdef": auth.RoleRead,
		"writer-0123456789abcdef": auth.RoleWrite,
		"admin--0123456789abcdef": auth.RoleAdmin,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	h, err := New(Config{Backend: be, Registerer: reg, Gatherer: reg, Auth: authn})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, token, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/v1/kv/a", "", "", 401},
		{"GET", "/v1/kv/a", "not-a-token-0123456789", "", 401},
		{"GET", "/v1/kv/a", "reader-0123456789abcdef", "", 404},
		{"PUT", "/v1/kv/a", "reader-0123456789abcdef", `{"value":"x"}`, 403},
		{"PUT", "/v1/kv/a", "writer-0123456789abcdef", `{"value":"x"}`, 200},
		{"POST", "/v1/cluster/nodes", "writer-0123456789abcdef", `{"id":9,"raft_addr":"127.0.0.1:1"}`, 403},
		{"POST", "/v1/cluster/nodes", "admin--0123456789abcdef", `{"id":9,"raft_addr":"127.0.0.1:1"}`, 200},
		{"PUT", "/v1/cluster/groups/1/preferred-leader", "writer-0123456789abcdef", `{"node":1}`, 403},
		{"GET", "/v1/cluster/groups", "reader-0123456789abcdef", "", 200},
		{"GET", "/healthz", "", "", 200},
		{"GET", "/metrics", "", "", 401},
		{"GET", "/metrics", "reader-0123456789abcdef", "", 200},
	} {
		w := do(tc.method, tc.path, tc.token, tc.body)
		if w.Code != tc.want {
			t.Errorf("%s %s token %q: %d %s, want %d", tc.method, tc.path, tc.token, w.Code, w.Body, tc.want)
		}
		if w.Code == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s %s: 401 without WWW-Authenticate", tc.method, tc.path)
		}
		if (w.Code == 401 || w.Code == 403) && !strings.Contains(w.Body.String(), `"code":"`) {
			t.Errorf("%s %s: %d without the error JSON: %s", tc.method, tc.path, w.Code, w.Body)
		}
	}
	if n := be.count("Propose"); n != 1 {
		t.Fatalf("%d proposals; only the writer's PUT may reach the backend", n)
	}
}
