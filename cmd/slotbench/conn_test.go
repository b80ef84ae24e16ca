package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// server answers by path; it counts the connections it accepted.
func testServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var opened atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, `{"error":{"code":"bad_request"}}`, http.StatusBadRequest)
			return
		}
		w.Write([]byte(r.PathValue("key") + "=" + string(b)))
	})
	mux.HandleFunc("GET /chunked", func(w http.ResponseWriter, r *http.Request) {
		for range 3 {
			w.Write(bytes.Repeat([]byte("x"), 3000))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("GET /close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Write([]byte("bye"))
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 1<<20+1))
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &opened
}

func TestConnsKeepAliveAndAnswers(t *testing.T) {
	srv, opened := testServer(t)
	ctx := context.Background()
	cs := newConns(2*time.Second, "tok", false)
	defer cs.close()
	var body bytes.Buffer
	for i := range 5 {
		c := slotmetaBackend{}.put(srv.URL, "k", []byte("v"))
		st, err := cs.roundTrip(ctx, c, &body)
		if err != nil || st != 200 || body.String() != `k={"value":"v"}` {
			t.Fatalf("put %d: %d %v %q", i, st, err, body.String())
		}
	}
	if n := opened.Load(); n != 1 {
		t.Errorf("5 requests opened %d connections, want 1 (keep-alive)", n)
	}
	host := hostOf(srv.URL)
	if st, err := cs.roundTrip(ctx, call{method: "GET", host: host, path: "/chunked"}, &body); err != nil || st != 200 || body.Len() != 9000 {
		t.Fatalf("chunked: %d %v %d bytes", st, err, body.Len())
	}
	if st, err := cs.roundTrip(ctx, call{method: "GET", host: host, path: "/close"}, &body); err != nil || st != 200 || body.String() != "bye" {
		t.Fatalf("close: %d %v %q", st, err, body.String())
	}
	// The server closed that connection: the next request dials a new one.
	if st, err := cs.roundTrip(ctx, call{method: "GET", host: host, path: "/nothing"}, &body); err != nil || st != 404 {
		t.Fatalf("after close: %d %v", st, err)
	}
	if n := opened.Load(); n != 2 {
		t.Errorf("opened %d connections, want 2", n)
	}
	if _, err := cs.roundTrip(ctx, call{method: "GET", host: host, path: "/big"}, &body); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("an answer over 1 MiB: %v", err)
	}
}

func TestConnsTimeoutAndClose(t *testing.T) {
	srv, _ := testServer(t)
	cs := newConns(100*time.Millisecond, "", false)
	w := &worker{cfg: &Config{}, be: slotmetaBackend{}, conns: cs}
	if got := w.do(context.Background(), call{method: "GET", host: hostOf(srv.URL), path: "/slow", expect: 200}); got != "client-timeout" {
		t.Errorf("slow answer: %q, want client-timeout", got)
	}
	if got := w.do(context.Background(), slotmetaBackend{}.put(srv.URL, "k", []byte("v"))); got != "400 bad_request" {
		t.Errorf("put without a token: %q", got)
	}
	cs.close()
	if got := w.do(context.Background(), slotmetaBackend{}.ready(srv.URL)); got != "canceled" {
		t.Errorf("after close: %q, want canceled", got)
	}
	// Nothing listens on a port the OS handed out and took back.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	w.conns = newConns(time.Second, "", false)
	defer w.conns.close()
	if got := w.do(context.Background(), call{method: "GET", host: addr, path: "/"}); got != "connection-refused" {
		t.Errorf("closed port: %q", got)
	}
	if got := w.do(context.Background(), call{method: "GET", host: "10.0.0.1:80", path: "/"}); !strings.HasPrefix(got, "transport:") {
		t.Errorf("non-loopback dial: %q", got)
	}
}

// TestIdempotencyKeysAreSent: with -idempotency-keys a kv-put carries its
// own Idempotency-Key (as the routed client's writes do); without, none.
func TestIdempotencyKeysAreSent(t *testing.T) {
	cfg := &Config{Workload: "kv-put", RunID: "r", IdempotencyKeys: true, Endpoints: []string{"http://h:1"}}
	w := &worker{id: 3, cfg: cfg, be: slotmetaBackend{}, value: []byte("v")}
	req := string(appendRequest(nil, w.next(7), ""))
	if !strings.Contains(req, "\r\nIdempotency-Key: sbi.sb.r.3.7\r\n") {
		t.Fatalf("with keys:\n%s", req)
	}
	cfg.IdempotencyKeys = false
	if req := string(appendRequest(nil, w.next(7), "")); strings.Contains(req, "Idempotency-Key") {
		t.Fatalf("without keys:\n%s", req)
	}
}
