package peer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"slotmeta/internal/slotstore"
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
