package peer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestSecretRotation: a rolling secret change fails no call. The server is
// given the new secret first: it still accepts the old one during the
// overlap. A client given the new secret calls a server that still has
// only the old one: refused once, retried with the previous secret. After
// the overlap only the new secret opens the server.
func TestSecretRotation(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	srvSecret, cliSecret := NewSecret("old-secret"), NewSecret("old-secret")
	srvSecret.now, cliSecret.now = clock, clock
	s := NewServer(srvSecret, 4)
	var served atomic.Int64
	s.Handle(http.MethodPost, "echo", func(_ context.Context, w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		b := make([]byte, 5)
		n, _ := r.Body.Read(b)
		_, _ = w.Write(b[:n])
	})
	ts := httptest.NewServer(s)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	c := NewClient(cliSecret, 4)
	call := func() error {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, _, err := c.Call(ctx, http.MethodPost, addr, "echo", []byte("hello"), nil)
		if err != nil {
			return err
		}
		body, _ := ReadBody(resp)
		if string(body) != "hello" {
			t.Fatalf("body %q: a retried call must send its body again", body)
		}
		return nil
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	// The client first: its new secret is refused, the old one retried.
	cliSecret.Set("new-secret", time.Minute)
	if err := call(); err != nil {
		t.Fatalf("client rotated first: %v", err)
	}
	// Then the server: the new secret at once.
	srvSecret.Set("new-secret", time.Minute)
	if !srvSecret.Accepts("old-secret") || !srvSecret.Accepts("new-secret") || srvSecret.Accepts("other") {
		t.Fatal("overlap: old and new accepted, nothing else")
	}
	if err := call(); err != nil {
		t.Fatalf("both rotated: %v", err)
	}
	// After the overlap the old secret is refused, and not retried.
	now = now.Add(2 * time.Minute)
	if srvSecret.Accepts("old-secret") || !srvSecret.OverlapUntil().IsZero() {
		t.Fatal("old secret accepted after the overlap")
	}
	old := NewClient(NewSecret("old-secret"), 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, _, err := old.Call(ctx, http.MethodPost, addr, "echo", nil, nil); slotstore.ErrorCode(err) != slotstore.CodeUnauthenticated {
		t.Fatalf("old secret after the overlap: %v", err)
	}
	if served.Load() != 3 {
		t.Fatalf("served %d calls, want 3", served.Load())
	}
}

// TestSecretRotatedTwice: a second rotation within the first's overlap
// keeps the first secret for the rest of its own overlap; Accept adds
// secrets without an end (a node restarted mid-rotation), and is bounded.
func TestSecretRotatedTwice(t *testing.T) {
	now := time.Unix(1000, 0)
	s := NewSecret("s1")
	s.now = func() time.Time { return now }
	s.Set("s2", time.Minute)
	now = now.Add(30 * time.Second)
	s.Set("s3", time.Minute)
	if !s.Accepts("s1") || !s.Accepts("s2") || !s.Accepts("s3") || s.Current() != "s3" {
		t.Fatal("after two rotations within the overlap: s1, s2 and s3 accepted, s3 sent")
	}
	if got := s.Previous(); len(got) != 2 || got[0] != "s2" || got[1] != "s1" {
		t.Fatalf("previous %v, want [s2 s1]", got)
	}
	now = now.Add(31 * time.Second) // s1's overlap ended, s2's runs
	if s.Accepts("s1") || !s.Accepts("s2") || s.OverlapUntil() != time.Unix(1000, 0).Add(90*time.Second) {
		t.Fatalf("s1 accepted after its overlap, or s2 not: overlap until %v", s.OverlapUntil())
	}
	r := NewSecret("new")
	r.now = s.now
	r.Accept([]string{"old", "older", "new", "a", "b", "c"})
	if !r.Accepts("old") || !r.Accepts("older") || len(r.Previous()) != maxOldSecrets || !r.OverlapUntil().IsZero() {
		t.Fatalf("accepted: %v", r.Previous())
	}
	r.Accept(nil)
	if r.Accepts("old") || !r.Accepts("new") {
		t.Fatal("Accept(nil) must drop the extra secrets and keep the current one")
	}
}

// TestRotationDoesNotTripTheLimiter: a client rotated ahead of its peer
// makes 200 calls; it remembers the secret the peer took, so the peer
// refuses about one call a second — not every call, which would soon have
// the peer rate-limit the client's address (wrong secrets are limited per
// source) — and every call is served.
func TestRotationDoesNotTripTheLimiter(t *testing.T) {
	s := NewServer(NewSecret("old-secret"), 4)
	var refused, limited atomic.Int64
	s.OnAuthFailure(func(l bool) {
		refused.Add(1)
		if l {
			limited.Add(1)
		}
	})
	s.Handle(http.MethodPost, "echo", func(_ context.Context, w http.ResponseWriter, r *http.Request) {})
	ts := httptest.NewServer(s)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	cli := NewSecret("old-secret")
	cli.Set("new-secret", time.Hour)
	c := NewClient(cli, 4)
	start := time.Now()
	for i := range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _, err := c.Call(ctx, http.MethodPost, addr, "echo", nil, nil)
		cancel()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if max := int64(time.Since(start)/time.Second) + 2; refused.Load() > max || limited.Load() > 0 {
		t.Fatalf("%d refusals (%d limited) for 200 calls in %v, want at most %d and none limited", refused.Load(), limited.Load(), time.Since(start), max)
	}
}

// TestWrongSecretsAreRateLimited: past the burst a source's wrong secrets
// are refused 429; a right one is still served.
func TestWrongSecretsAreRateLimited(t *testing.T) {
	s := NewServer(NewSecret("right"), 4)
	frozen := time.Unix(1000, 0) // no refill while the test runs, however slow
	s.limiter = auth.NewLimiter(auth.LimiterConfig{Rate: authFailRate, Burst: authFailBurst, Now: func() time.Time { return frozen }})
	s.Handle(http.MethodPost, "echo", func(_ context.Context, w http.ResponseWriter, r *http.Request) {})
	ts := httptest.NewServer(s)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	wrong := NewClient(NewSecret("wrong"), 4)
	call := func(c *Client) slotstore.Code {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, _, err := c.Call(ctx, http.MethodPost, addr, "echo", nil, nil)
		return slotstore.ErrorCode(err)
	}
	for i := range authFailBurst {
		if code := call(wrong); code != slotstore.CodeUnauthenticated {
			t.Fatalf("wrong secret %d: %q, want unauthenticated", i, code)
		}
	}
	if code := call(wrong); code != slotstore.CodeRateLimited {
		t.Fatalf("past the burst: %q, want rate_limited", code)
	}
	// The right secret is taken all the same: a local process sending wrong
	// ones must not lock the nodes (one loopback source) out of each other.
	if code := call(NewClient(NewSecret("right"), 4)); code != "" {
		t.Fatalf("right secret from a limited source: %q, want it served", code)
	}
}
