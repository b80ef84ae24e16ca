package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
)

// TestStreamIsForwardedWithTheSessionsToken: the live tails' stream
// requests reach the API as its own routes, carrying the session's token
// (the cookies are not sent on); a cross-origin POST stops at the
// console's guard; a console without an API answers 404 (its tails poll).
func TestStreamIsForwardedWithTheSessionsToken(t *testing.T) {
	f := newFake()
	authn, err := auth.New(map[string]auth.Role{adminTok: auth.RoleAdmin, readTok: auth.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ method, uri, authz, cookie, body string }
	var got []seen
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ck := ""
		if c, err := r.Cookie(auth.SessionCookie); err == nil {
			ck = c.Value
		}
		got = append(got, seen{r.Method, r.RequestURI, r.Header.Get("Authorization"), ck, string(b)})
		w.WriteHeader(http.StatusTeapot)
	})
	sess := auth.NewSessions(auth.SessionsConfig{})
	ts := httptest.NewServer(Handler(Config{Source: f, Auth: authn, Audit: audit.New(f, nil), Sessions: sess, API: api}))
	defer ts.Close()
	sid := sess.Open(readTok)
	send := func(method, path, body string, hdr ...string) int {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: sid})
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := send("GET", "/console/stream?progress_interval_ms=1000", ""); s != http.StatusTeapot {
		t.Fatalf("open: %d", s)
	}
	if s := send("POST", "/console/stream/abc123", `{"watches":[]}`, "Content-Type", "application/json"); s != http.StatusTeapot {
		t.Fatalf("add: %d", s)
	}
	want := []seen{
		{"GET", "/v1/watch/stream?progress_interval_ms=1000", "Bearer " + readTok, "", ""},
		{"POST", "/v1/watch/stream/abc123", "Bearer " + readTok, "", `{"watches":[]}`},
	}
	if len(got) != len(want) {
		t.Fatalf("the API saw %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("request %d: the API saw %+v, want %+v", i, got[i], want[i])
		}
	}
	// An escaped slash stays inside the id's segment: no other API path.
	got = nil
	if s := send("POST", "/console/stream/x%2F..%2F..%2Fcluster", `{}`); s != http.StatusTeapot || len(got) != 1 || got[0].uri != "/v1/watch/stream/x%2F..%2F..%2Fcluster" {
		t.Fatalf("an id with slashes: %d, the API saw %+v", s, got)
	}
	got = nil
	if s := send("POST", "/console/stream/abc123", `{}`, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); s != http.StatusForbidden || len(got) != 0 {
		t.Fatalf("a cross-origin add: %d, the API saw %+v", s, got)
	}
	if s := send("DELETE", "/console/stream/abc123/1", ""); s != http.StatusNotFound || len(got) != 0 {
		t.Fatalf("a cancel (the tails never cancel): %d, the API saw %+v", s, got)
	}

	bare := httptest.NewServer(Handler(Config{Source: f}))
	defer bare.Close()
	resp, err := http.Get(bare.URL + "/console/stream")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("without an API: %d", resp.StatusCode)
	}
}
