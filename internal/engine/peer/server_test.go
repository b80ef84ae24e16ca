package peer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func peerRequest(t *testing.T, h http.Handler, secret, timeout string) (int, envelope) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, Prefix+"leaders", nil)
	if secret != "" {
		req.Header.Set(hdrSecret, secret)
	}
	if timeout != "" {
		req.Header.Set(hdrTimeoutMs, timeout)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var pe envelope
	if rec.Code != http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &pe); err != nil {
			t.Fatalf("%d without the error envelope: %s", rec.Code, rec.Body)
		}
	}
	return rec.Code, pe
}

func TestPeerRPCRefusesWithoutSecretOrBudget(t *testing.T) {
	s := NewServer(NewSecret("right"), 1)
	ran := false
	s.Handle(http.MethodGet, "leaders", func(context.Context, http.ResponseWriter, *http.Request) { ran = true })
	h := s
	for _, tc := range []struct {
		secret, timeout string
		status          int
		code            slotstore.Code
	}{
		{"", "1000", 401, slotstore.CodeUnauthenticated},
		{"wrong", "1000", 401, slotstore.CodeUnauthenticated},
		{"righ", "1000", 401, slotstore.CodeUnauthenticated},
		{"right", "", 400, slotstore.CodeInvalidArgument},
		{"right", "0", 400, slotstore.CodeInvalidArgument},
		{"right", "abc", 400, slotstore.CodeInvalidArgument},
		{"right", "600000", 400, slotstore.CodeInvalidArgument},
	} {
		status, pe := peerRequest(t, h, tc.secret, tc.timeout)
		if status != tc.status || pe.Code != tc.code || ran {
			t.Fatalf("secret %q timeout %q: %d %+v (handler ran: %v)", tc.secret, tc.timeout, status, pe, ran)
		}
	}
	if status, _ := peerRequest(t, h, "right", "1000"); status != 200 || !ran {
		t.Fatalf("a good request: %d, handler ran %v", status, ran)
	}
}

func TestPeerRPCServesABoundedNumberAtOnce(t *testing.T) {
	s := NewServer(NewSecret("right"), 1)
	s.slots <- struct{}{} // one request in flight: the bound
	s.Handle(http.MethodGet, "leaders", func(context.Context, http.ResponseWriter, *http.Request) { t.Fatal("ran past the bound") })
	h := s
	status, pe := peerRequest(t, h, "right", "1000")
	if status != 503 || pe.Code != slotstore.CodeBusy || pe.RetryAfterMs <= 0 {
		t.Fatalf("over the bound: %d %+v", status, pe)
	}
}

func TestPeerClientBoundsInFlightPerPeer(t *testing.T) {
	c := NewClient(NewSecret("s"), 2)
	r1, err := c.acquire("a:1")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.acquire("a:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.acquire("a:1"); slotstore.ErrorCode(err) != slotstore.CodeBusy {
		t.Fatalf("third in flight to one peer: %v, want busy", err)
	}
	if r, err := c.acquire("b:1"); err != nil {
		t.Fatalf("another peer has its own bound: %v", err)
	} else {
		r()
	}
	r1()
	if r, err := c.acquire("a:1"); err != nil {
		t.Fatalf("after a release: %v", err)
	} else {
		r()
	}
	r2()
}

func TestPeerClientNeedsADeadline(t *testing.T) {
	c := NewClient(NewSecret("s"), 1)
	if _, _, err := c.Call(context.Background(), http.MethodGet, "127.0.0.1:1", "leaders", nil, nil); err == nil ||
		!strings.Contains(err.Error(), "deadline") {
		t.Fatalf("a call without a deadline: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// Nothing listens on port 1: the dial fails, the request was never sent.
	_, sent, err := c.Call(ctx, http.MethodGet, "127.0.0.1:1", "leaders", nil, nil)
	if err == nil || sent || slotstore.ErrorCode(err) != slotstore.CodeRouteNotReady {
		t.Fatalf("dial failure: sent=%v %v", sent, err)
	}
}

// TestPeerClientAsksAtMostThePeersLimit: a caller with more time left
// than a peer works on a request asks for the peer's limit, not for its
// own deadline (which the peer refuses).
func TestPeerClientAsksAtMostThePeersLimit(t *testing.T) {
	s := NewServer(NewSecret("right"), 1)
	var left time.Duration
	s.Handle(http.MethodGet, "leaders", func(ctx context.Context, w http.ResponseWriter, _ *http.Request) {
		dl, _ := ctx.Deadline()
		left = time.Until(dl)
	})
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := NewClient(NewSecret("right"), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, _, err := c.Call(ctx, http.MethodGet, srv.Listener.Addr().String(), "leaders", nil, nil); err != nil {
		t.Fatalf("a call with three minutes left: %v", err)
	}
	if left <= 0 || left > maxPeerTime {
		t.Fatalf("the peer worked within %v, want at most %v", left, maxPeerTime)
	}
}

// TestPeerRPCRefusesRemovedNodes: a request naming a node the cluster
// removed is answered permission_denied before its handler runs; the
// client names its node in every call.
func TestPeerRPCRefusesRemovedNodes(t *testing.T) {
	s := NewServer(NewSecret("right"), 4)
	s.RefuseFrom(func(from slotstore.NodeID) bool { return from == 4 })
	ran := 0
	s.Handle(http.MethodGet, "leaders", func(_ context.Context, w http.ResponseWriter, _ *http.Request) {
		ran++
		_, _ = w.Write([]byte("{}"))
	})
	ts := httptest.NewServer(s)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	call := func(from slotstore.NodeID) error {
		c := NewClient(NewSecret("right"), 4)
		c.From(from)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, _, err := c.Call(ctx, http.MethodGet, addr, "leaders", nil, nil)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := call(4); slotstore.ErrorCode(err) != slotstore.CodePermissionDenied || !strings.Contains(err.Error(), "node 4 was removed") || ran != 0 {
		t.Fatalf("a removed node's call: %v (handler ran %d times)", err, ran)
	}
	if err := call(2); err != nil || ran != 1 {
		t.Fatalf("another node's call: %v (handler ran %d times)", err, ran)
	}
}
