package httpapi

import (
	"encoding/json"
	"time"

	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/audit"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
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
		return serveAs(h, method, path, token, body, "")
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

// TestAuditAndFailureLimit: admin actions are recorded with the token's
// name, the route and the outcome (done, refused by the cluster, denied
// for the role); reads and data writes are not; a source that fails
// authentication too often gets 429 rate_limited with Retry-After — even
// with a valid token — while another source is unaffected.
func TestAuditAndFailureLimit(t *testing.T) {
	be := newFake(t, 4)
	authn, err := auth.FromCredentials(auth.Credentials{Tokens: []auth.Token{
		{Secret: "writer-0123456789abcdef", Role: auth.RoleWrite, Name: "app"},
		{Secret: "admin--0123456789abcdef", Role: auth.RoleAdmin, Name: "ops-alice"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	lim := auth.NewLimiter(auth.LimiterConfig{Rate: 1, Burst: 3, Now: func() time.Time { return now }})
	reg := prometheus.NewRegistry()
	h, err := New(Config{Backend: be, Registerer: reg, Gatherer: reg, Auth: authn, Limiter: lim, Audit: audit.New(be, nil)})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, token, body, from string) *httptest.ResponseRecorder {
		return serveAs(h, method, path, token, body, from)
	}
	const admin, writer, ip = "admin--0123456789abcdef", "writer-0123456789abcdef", "10.0.0.7"
	for _, c := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"PUT", "/v1/cluster/groups/1/preferred-leader", admin, `{"node":1}`, 200},
		{"PUT", "/v1/cluster/groups/1/preferred-leader", admin, `{"node":0}`, 400},
		{"PUT", "/v1/cluster/groups/1/preferred-leader", writer, `{"node":1}`, 403},
		{"GET", "/v1/cluster/groups", admin, "", 200},
		{"PUT", "/v1/kv/a", writer, `{"value":"x"}`, 200},
	} {
		if w := do(c.method, c.path, c.token, c.body, ip); w.Code != c.want {
			t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, w.Code, w.Body, c.want)
		}
	}
	trail := be.AuditTrail()
	if len(trail) != 3 {
		t.Fatalf("audit trail: %+v", trail)
	}
	for i, want := range []struct {
		who     string
		outcome slotstore.AuditOutcome
	}{{"ops-alice", "ok"}, {"ops-alice", "refused"}, {"app", "denied"}} {
		rec := trail[i]
		if rec.Who != want.who || rec.Outcome != want.outcome || rec.Source != ip || rec.Target != "/v1/cluster/groups/1/preferred-leader" {
			t.Errorf("record %d: %+v, want %s %s", i, rec, want.who, want.outcome)
		}
	}
	if trail[0].Action != "PUT /v1/cluster/groups/{id}/preferred-leader" || trail[0].Role != "admin" || trail[0].Via != "token" {
		t.Errorf("record 0: %+v", trail[0])
	}
	if trail[1].Code != "invalid_argument" || trail[1].Status != 400 || trail[2].Status != 403 {
		t.Errorf("refusals: %+v / %+v", trail[1], trail[2])
	}
	// GET /v1/cluster/audit pages newest first.
	w := do("GET", "/v1/cluster/audit?limit=2", admin, "", ip)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"next_before":2`) || strings.Index(w.Body.String(), `"seq":3`) > strings.Index(w.Body.String(), `"seq":2`) {
		t.Fatalf("audit page: %d %s", w.Code, w.Body)
	}
	if w := do("GET", "/v1/cluster/audit?before=2", admin, "", ip); w.Code != 200 || !strings.Contains(w.Body.String(), `"seq":1`) || strings.Contains(w.Body.String(), `"seq":2`) {
		t.Fatalf("audit before=2: %d %s", w.Code, w.Body)
	}
	// The same with the cursor every listing takes.
	var page struct {
		Items []struct {
			Seq uint64 `json:"seq"`
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || page.NextCursor == "" {
		t.Fatalf("audit page: %v %s", err, w.Body)
	}
	if w := do("GET", "/v1/cluster/audit?cursor="+page.NextCursor, admin, "", ip); w.Code != 200 || !strings.Contains(w.Body.String(), `"seq":1`) ||
		strings.Contains(w.Body.String(), `"seq":2`) || strings.Contains(w.Body.String(), "next_cursor") {
		t.Fatalf("audit cursor: %d %s", w.Code, w.Body)
	}
	if w := do("GET", "/v1/cluster/audit?cursor=bogus", admin, "", ip); w.Code != 400 {
		t.Fatalf("audit cursor=bogus: %d %s", w.Code, w.Body)
	}
	if w := do("GET", "/v1/cluster/audit?before=x", admin, "", ip); w.Code != 400 {
		t.Fatalf("audit before=x: %d %s", w.Code, w.Body)
	}
	// Three failures use up the burst; then even the valid token waits.
	for range 3 {
		if w := do("GET", "/v1/kv/a", "guess-0123456789abcdef", "", ip); w.Code != 401 {
			t.Fatalf("a wrong token: %d", w.Code)
		}
	}
	w = do("GET", "/v1/kv/a", writer, "", ip)
	if w.Code != 429 || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), `"code":"rate_limited"`) {
		t.Fatalf("after the burst: %d %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := do("GET", "/v1/kv/a", writer, "", "10.0.0.8"); w.Code == 429 {
		t.Fatal("another source was limited")
	}
	now = now.Add(time.Second)
	if w := do("GET", "/v1/kv/a", writer, "", ip); w.Code == 429 {
		t.Fatal("still limited after the refill")
	}
}

// serveAs serves one request with a bearer token (if any), a JSON body (if
// any) and, if from is set, that source address.
func serveAs(h http.Handler, method, path, token, body, from string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if from != "" {
		r.RemoteAddr = from + ":40000"
	}
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

// TestTokenWithAccessControlOffIsNotSilent: a node without credentials
// serves a request that carries a token, and says the token was not checked.
func TestTokenWithAccessControlOffIsNotSilent(t *testing.T) {
	h := newHandler(t, newFake(t, 1))
	w := do(t, h, "GET", "/v1/kv/k", "", "Authorization", "Bearer some-token-0123456789")
	if !strings.Contains(w.Header().Get("Warning"), "not checked") {
		t.Fatalf("no warning: %v", w.Header())
	}
	if w := do(t, h, "GET", "/v1/kv/k", ""); w.Header().Get("Warning") != "" {
		t.Fatal("a warning without a token")
	}
}

// TestBodylessRequestsRefuseABody (issue 49): a request that takes no body
// refuses one instead of ignoring it — none of the operation runs — and
// takes none, or an empty object.
func TestBodylessRequestsRefuseABody(t *testing.T) {
	be := newFake(t, 4)
	reg := prometheus.NewRegistry()
	h, err := New(Config{Backend: be, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"destination":"/elsewhere"}`, `[]`, `not json`, `{}` + strings.Repeat(" ", 70) + `x`} {
		w := serveAs(h, "POST", "/v1/cluster/backups", "", body, "")
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "takes no request body") {
			t.Errorf("POST /v1/cluster/backups with %q: %d %s", body, w.Code, w.Body)
		}
	}
	if n := be.count("StartBackup"); n != 0 {
		t.Fatalf("a refused request started %d backups", n)
	}
	for _, body := range []string{"", "{}", " { } \n"} {
		// The fake runs one backup at a time: the later ones are refused
		// by it (409), past the body check.
		if w := serveAs(h, "POST", "/v1/cluster/backups", "", body, ""); w.Code != http.StatusAccepted && w.Code != http.StatusConflict {
			t.Errorf("POST /v1/cluster/backups with %q: %d %s", body, w.Code, w.Body)
		}
	}
	if n := be.count("StartBackup"); n != 3 {
		t.Fatalf("%d backups asked for, want 3", n)
	}
	if w := serveAs(h, "POST", "/v1/cluster/nodes/3/drain", "", `{"force":true}`, ""); w.Code != http.StatusBadRequest {
		t.Errorf("a drain with a body: %d %s", w.Code, w.Body)
	}
}
