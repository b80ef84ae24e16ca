package httpapi

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestRecoverRoute: POST /v1/cluster/groups/{id}/recover is an admin's,
// refused without the confirmation (400), for a group whose quorum stands
// (412) and an unknown group (404); answered with the report otherwise;
// every attempt audited. GET /v1/cluster/recoveries lists the reports, for
// admins only (they name keys).
func TestRecoverRoute(t *testing.T) {
	be := newFake(t, 4)
	authn, err := auth.FromCredentials(auth.Credentials{Tokens: []auth.Token{
		{Secret: "writer-0123456789abcdef", Role: auth.RoleWrite, Name: "app"},
		{Secret: "admin--0123456789abcdef", Role: auth.RoleAdmin, Name: "ops-alice"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	h, err := New(Config{Backend: be, Registerer: reg, Gatherer: reg, Auth: authn, Audit: audit.New(be, nil)})
	if err != nil {
		t.Fatal(err)
	}
	lost := slotstore.GroupView{ID: 3, HashSlots: 64, Voters: []slotstore.NodeID{1, 2, 3}}
	be.SetGroup(lost)
	const admin, writer = "admin--0123456789abcdef", "writer-0123456789abcdef"
	for _, c := range []struct {
		method, path, token, body string
		want                      int
		says                      string
	}{
		{"POST", "/v1/cluster/groups/3/recover", admin, `{}`, 400, "accept_data_loss"},
		{"POST", "/v1/cluster/groups/3/recover", admin, `{"accept_data_loss":false}`, 400, "accept_data_loss"},
		{"POST", "/v1/cluster/groups/3/recover", admin, `{"accept_data_loss":"yes"}`, 400, "accept_data_loss"},
		{"POST", "/v1/cluster/groups/1/recover", admin, `{"accept_data_loss":true}`, 412, "quorum is not lost"},
		{"POST", "/v1/cluster/groups/9/recover", admin, `{"accept_data_loss":true}`, 404, "does not exist"},
		{"POST", "/v1/cluster/groups/3/recover", writer, `{"accept_data_loss":true}`, 403, "permission_denied"},
		{"GET", "/v1/cluster/recoveries", writer, "", 403, "permission_denied"},
		{"GET", "/v1/cluster/recoveries", admin, "", 200, `"items":[]`},
		{"POST", "/v1/cluster/groups/3/recover", admin, `{"accept_data_loss":true}`, 200, `"recovered_index":40`},
		{"GET", "/v1/cluster/recoveries", admin, "", 200, `"group":3`},
	} {
		w := serveAs(h, c.method, c.path, c.token, c.body, "10.0.0.7")
		if w.Code != c.want || !strings.Contains(w.Body.String(), c.says) {
			t.Fatalf("%s %s %s: %d %s, want %d saying %q", c.method, c.path, c.body, w.Code, w.Body, c.want, c.says)
		}
	}
	var recovers int
	for _, rec := range be.AuditTrail() {
		if strings.HasSuffix(rec.Target, "/recover") {
			recovers++
		}
	}
	if recovers != 7 {
		t.Fatalf("%d recoveries audited, want 7: %+v", recovers, be.AuditTrail())
	}
}
