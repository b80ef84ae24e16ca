package auth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
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
		{"POST", "/v1/batch/kv/get", "Bearer read-token-0123456789", ""},
		{"POST", "/v1/batch/kv/get", "", slotstore.CodeUnauthenticated},
		{"GET", "/healthz", "", ""},
		{"GET", "/readyz", "", ""},
		{"GET", "/openapi.yaml", "", ""},
		{"GET", "/metrics", "", slotstore.CodeUnauthenticated},
	} {
		r := req(tc.method, tc.path, tc.auth)
		_, err := a.Require(r, RequiredRole(r))
		if got := slotstore.ErrorCode(err); got != tc.want {
			t.Errorf("%s %s with %q: %v, want %q", tc.method, tc.path, tc.auth, err, tc.want)
		}
	}
	// A cookie is never a credential of the API: not the console's session
	// cookie, not a cookie holding a valid token.
	for _, name := range []string{SessionCookie, "slotmeta_token"} {
		r := req("PUT", "/v1/kv/k", "")
		r.AddCookie(&http.Cookie{Name: name, Value: "write-token-0123456789"})
		if _, err := a.Require(r, RoleWrite); slotstore.ErrorCode(err) != slotstore.CodeUnauthenticated {
			t.Fatalf("a token in cookie %s: %v, want unauthenticated", name, err)
		}
	}
}

func TestOffWithoutTokens(t *testing.T) {
	a, err := New(nil)
	if err != nil || a.Enabled() {
		t.Fatalf("empty authenticator: %v %v", a.Enabled(), err)
	}
	if _, err := a.Require(req("POST", "/v1/cluster/nodes", ""), RoleAdmin); err != nil {
		t.Fatalf("checking must be off without tokens: %v", err)
	}
}

func TestParse(t *testing.T) {
	c, err := Parse(strings.NewReader("# ops\nadmin  admin-token-0123456789 ops-alice\n\nread read-token-0123456789\nwrite cert:app-server-1\n"))
	if err != nil || len(c.Tokens) != 2 || c.Tokens[0].Role != RoleAdmin || c.Tokens[0].Name != "ops-alice" || c.Tokens[1].Name != "" ||
		c.Certs["app-server-1"] != RoleWrite {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"root tok-0123456789012345", "admin", "admin a-0123456789012345 b c", "read x-0123456789012345\nwrite x-0123456789012345",
		"admin short", "admin a-0123456789012345 bad/name", "admin a-0123456789012345 n\nread b-0123456789012345 n",
		"admin cert:", "admin cert:x extra", "admin cert:x\nread cert:x"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	env, err := ParseEnv("admin:admin-token-0123456789, read:read-token-0123456789")
	if err != nil || len(env) != 2 || env[1].Role != RoleRead || env[1].Secret != "read-token-0123456789" {
		t.Fatalf("%v %v", env, err)
	}
	if _, err := ParseEnv("nocolon"); err == nil {
		t.Fatal("a malformed env entry parsed")
	}
	if _, err := New(map[string]Role{"short": RoleAdmin}); err == nil {
		t.Fatal("a short token was accepted")
	}
}

// TestIdentity: a named token, an unnamed one (named by its digest), a
// mapped client certificate, and the answers for unknown credentials, which
// say nothing about which tokens exist.
func TestIdentity(t *testing.T) {
	a, err := FromCredentials(Credentials{
		Tokens: []Token{{Secret: "admin-token-0123456789", Role: RoleAdmin, Name: "ops-alice"}, {Secret: "read-token-0123456789", Role: RoleRead}},
		Certs:  map[string]Role{"app-1": RoleWrite},
	})
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.Require(req("POST", "/v1/cluster/nodes", "Bearer admin-token-0123456789"), RoleAdmin)
	if err != nil || id.Name != "ops-alice" || id.Via != ViaToken || id.Role != RoleAdmin {
		t.Fatalf("named token: %+v %v", id, err)
	}
	id, err = a.Require(req("GET", "/v1/kv/a", "Bearer read-token-0123456789"), RoleRead)
	if err != nil || id.Name != DefaultName(RoleRead, 1) || id.Name != "read-token-2" {
		t.Fatalf("unnamed token: %+v %v", id, err)
	}
	r := req("PUT", "/v1/kv/a", "")
	leaf := &x509.Certificate{Subject: pkix.Name{CommonName: "app-1"}}
	r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf}}}
	if id, err = a.Require(r, RoleWrite); err != nil || id.Name != "app-1" || id.Via != ViaCertificate {
		t.Fatalf("certificate: %+v %v", id, err)
	}
	// A certificate the TLS layer did not verify counts for nothing.
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	if _, err = a.Require(r, RoleWrite); slotstore.ErrorCode(err) != slotstore.CodeUnauthenticated {
		t.Fatalf("unverified certificate: %v", err)
	}
	_, e1 := a.Require(req("GET", "/v1/kv/a", "Bearer no-such-token-0123456789"), RoleRead)
	_, e2 := a.Require(req("GET", "/v1/kv/a", "Bearer x"), RoleRead)
	if e1 == nil || e1.Error() != e2.Error() {
		t.Fatalf("unknown tokens must be answered alike: %v / %v", e1, e2)
	}
	// Swap: the new set applies at once.
	b, _ := New(map[string]Role{"new-admin-token-0123456789": RoleAdmin})
	a.Swap(b)
	if a.RoleOf("admin-token-0123456789") != RoleNone || a.RoleOf("new-admin-token-0123456789") != RoleAdmin {
		t.Fatal("swap did not replace the tokens")
	}
}

// TestLimiter: a source is blocked after its burst of failures, for the
// time one failure's worth of budget takes to refill — its valid token too,
// without being looked at; another source is not; a verified client
// certificate is never limited; sources stay bounded.
func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(LimiterConfig{Rate: 1, Burst: 3, MaxSources: 64, Now: func() time.Time { return now }})
	a, err := FromCredentials(Credentials{Tokens: []Token{{Secret: "good-token-0123456789", Role: RoleAdmin}}, Certs: map[string]Role{"ops": RoleAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	from := func(ip, token string) *http.Request {
		r := req("GET", "/v1/kv/a", "Bearer "+token)
		r.RemoteAddr = ip + ":5000"
		return r
	}
	for i := range 3 {
		if _, err := a.Check(from("10.0.0.1", "bad-token-0123456789"), RoleRead, l); slotstore.ErrorCode(err) != slotstore.CodeUnauthenticated {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	_, err = a.Check(from("10.0.0.1", "good-token-0123456789"), RoleRead, l)
	e := slotstore.AsError(err)
	if e == nil || e.Code != slotstore.CodeRateLimited || e.RetryAfter <= 0 || e.RetryAfter > time.Second || RetryAfterSeconds(e.RetryAfter) != 1 {
		t.Fatalf("after the burst: %v", err)
	}
	if _, err := a.Check(from("10.0.0.2", "good-token-0123456789"), RoleRead, l); err != nil {
		t.Fatalf("another source: %v", err)
	}
	withCert := from("10.0.0.1", "")
	withCert.Header.Del("Authorization")
	withCert.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: "ops"}}}}}
	if _, err := a.Check(withCert, RoleAdmin, l); err != nil {
		t.Fatalf("a verified certificate from a limited source: %v", err)
	}
	now = now.Add(time.Second)
	if _, err := a.Check(from("10.0.0.1", "good-token-0123456789"), RoleRead, l); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
	// IPv6 counts by /64; sources stay within MaxSources.
	v6 := req("GET", "/", "")
	v6.RemoteAddr = "[2001:db8:1:2:3:4:5:6]:443"
	if got := Source(v6); got != "2001:db8:1:2::/64" {
		t.Fatalf("IPv6 source %q", got)
	}
	for i := range 1000 {
		l.Guard(fmt.Sprintf("10.1.%d.%d", i/250, i%250), func() bool { return false })
	}
	n := 0
	for i := range l.stripes {
		n += len(l.stripes[i].sources)
	}
	if n > 64+limiterStripes {
		t.Fatalf("%d sources tracked", n)
	}
}

func TestSessions(t *testing.T) {
	now := time.Unix(1000, 0)
	s := NewSessions(SessionsConfig{TTL: time.Minute, Max: 2, Now: func() time.Time { return now }})
	a, b := s.Open("token-a"), s.Open("token-b")
	if a == b || len(a) < 40 || s.Token(a) != "token-a" || s.Token("nope") != "" {
		t.Fatalf("ids %q %q", a, b)
	}
	// Full: the one ending first goes.
	now = now.Add(time.Second)
	c := s.Open("token-c")
	if s.Token(a) != "" || s.Token(b) != "token-b" || s.Token(c) != "token-c" || s.Len() != 2 {
		t.Fatalf("eviction: a %q b %q c %q, %d kept", s.Token(a), s.Token(b), s.Token(c), s.Len())
	}
	// The cookie becomes the token for the console; an Authorization
	// header wins; an ended session says so.
	r := httptest.NewRequest("GET", "/console", nil)
	r.AddCookie(&http.Cookie{Name: SessionCookie, Value: c})
	if r2, ended := s.WithSession(r); ended || TokenOf(r2) != "token-c" || TokenOf(r) != "" {
		t.Fatalf("session request: %q ended %v", TokenOf(r2), ended)
	}
	s.Close(c)
	if _, ended := s.WithSession(r); !ended {
		t.Fatal("a closed session is not reported ended")
	}
	now = now.Add(time.Minute)
	if s.Token(b) != "" {
		t.Fatal("an expired session still answers")
	}
}

// TestLimiterLogsAndCountsFailures: each failure is counted and logged, a
// lockout at Warn; past the log's own budget lines are dropped and
// counted in the next line, so a flood of guesses cannot flood the log.
func TestLimiterLogsAndCountsFailures(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	l := NewLimiter(LimiterConfig{Rate: 0.001, Burst: 3, Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	for range 3 {
		l.Guard("10.0.0.1", func() bool { return false })
	}
	if _, _, blocked := l.Guard("10.0.0.1", func() bool { return true }); !blocked {
		t.Fatal("not locked out after the burst")
	}
	if l.Failures() != 3 || l.Lockouts() != 1 {
		t.Fatalf("failures %d lockouts %d, want 3 and 1", l.Failures(), l.Lockouts())
	}
	out := buf.String()
	if strings.Count(out, "authentication failed") != 3 || !strings.Contains(out, "level=WARN") || !strings.Contains(out, "source=10.0.0.1") {
		t.Fatalf("log:\n%s", out)
	}
	buf.Reset()
	for i := range 200 {
		l.Guard(fmt.Sprintf("10.0.1.%d", i), func() bool { return false })
	}
	if lines := strings.Count(buf.String(), "\n"); lines > logBurst+5 {
		t.Fatalf("%d lines for 200 failures in a moment", lines)
	}
	if l.Failures() != 203 {
		t.Fatalf("failures %d", l.Failures())
	}
}
