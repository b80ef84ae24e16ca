package httpapi

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/certs"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestMountedHandlersAnswerErrorJSON: the console's and the docs' unknown
// paths, answered by net/http's helpers in text, reach the client as the
// error JSON; their pages stay what they are.
func TestMountedHandlersAnswerErrorJSON(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/console/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusUnauthorized) // a login page: HTML, kept
		_, _ = io.WriteString(w, "<p>log in</p>")
	})
	h := newHandler(t, newFake(t, 1), func(c *Config) {
		c.Console = func(http.Handler) http.Handler { return mux }
		c.Docs = http.NotFoundHandler()
	})
	for _, path := range []string{"/console/nope", "/docs/nope"} {
		w := do(t, h, "GET", path, "")
		if w.Code != http.StatusNotFound {
			t.Fatalf("%s: %d", path, w.Code)
		}
		if e := decodeError(t, w); e.Code != slotstore.CodeNotFound || !strings.Contains(e.Message, path) {
			t.Fatalf("%s: %+v", path, e)
		}
	}
	if w := do(t, h, "GET", "/console/page", ""); w.Code != http.StatusUnauthorized || w.Body.String() != "<p>log in</p>" {
		t.Fatalf("an HTML page with an error status was changed: %d %q", w.Code, w.Body)
	}
}

// TestCannedErrorsAreJSON: what net/http's server answers by itself to a
// request it cannot parse — headers past MaxHeaderBytes, a malformed Host,
// an unknown transfer encoding, a bad request line — is the error JSON,
// with a length, and the connection closes.
func TestCannedErrorsAreJSON(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Connection", "close")
		http.Error(w, "a handler's own text", http.StatusBadRequest) // not canned: left alone
	}), MaxHeaderBytes: 1 << 10, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(CannedErrors(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	send := func(raw string) *http.Response {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return exchange(t, c, raw)
	}
	for _, tc := range []struct {
		raw    string
		status int
		code   slotstore.Code
	}{
		{"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, slotstore.CodePayloadTooLarge},
		{"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, slotstore.CodeInvalidArgument},
		{"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zip\r\n\r\n", 501, slotstore.CodeInvalidArgument},
		{"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400, slotstore.CodeInvalidArgument},
	} {
		resp := send(tc.raw)
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%.40q: %d %q", tc.raw, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var body errorBody
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error.Code != tc.code || body.Error.Message == "" {
			t.Fatalf("%.40q: %+v %v", tc.raw, body, err)
		}
	}
	if resp := send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("a handler's own answer was rewritten: %q", resp.Header.Get("Content-Type"))
	}
}

// TestCannedErrorsOverTLSAreJSON: over TLS too, net/http's own answers to
// requests it cannot parse are the error JSON, plain HTTP sent to the TLS
// port is answered the error JSON, and a handler still sees the client's
// certificate in Request.TLS.
func TestCannedErrorsOverTLSAreJSON(t *testing.T) {
	dir := t.TempDir()
	if err := certs.CreateCA(dir, certs.CAOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := certs.CreateNode(dir, []string{"127.0.0.1"}, certs.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := certs.CreateClient(dir, "alice", certs.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	server, err := certs.NewReloader(certs.NodeFiles(dir))
	if err != nil {
		t.Fatal(err)
	}
	client, err := certs.NewReloader(certs.ClientFiles(dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := "none"
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			who = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		_, _ = io.WriteString(w, who)
	}), MaxHeaderBytes: 1 << 10, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		_ = srv.Serve(CannedErrorsTLS(ln, server.ServerConfig(tls.VerifyClientCertIfGiven), 5*time.Second))
	}()
	t.Cleanup(func() { _ = srv.Close() })
	dialTLS := func(cfg *tls.Config) net.Conn {
		t.Helper()
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	wantJSON := func(resp *http.Response, status int, code slotstore.Code) {
		t.Helper()
		var body errorBody
		if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%d %q, want %d JSON", resp.StatusCode, resp.Header.Get("Content-Type"), status)
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error.Code != code || body.Error.Message == "" {
			t.Fatalf("%+v %v", body, err)
		}
	}
	big := "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n"
	wantJSON(exchange(t, dialTLS(client.ClientConfigFor("127.0.0.1")), big), http.StatusRequestHeaderFieldsTooLarge, slotstore.CodePayloadTooLarge)
	plain, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(exchange(t, plain, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"), http.StatusBadRequest, slotstore.CodeInvalidArgument)

	// A regular client: HTTP/1.1 (the only protocol offered), its
	// certificate seen by the handler.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: client.ClientConfigFor("127.0.0.1"), ForceAttemptHTTP2: true}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "alice" || resp.ProtoMajor != 1 {
		t.Fatalf("a client with a certificate: %d %s %q", resp.StatusCode, resp.Proto, b)
	}
}

// exchange writes a raw request on c, reads the whole answer and closes c.
func exchange(t *testing.T, c net.Conn, raw string) *http.Response {
	t.Helper()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%.40q: %v", raw, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return resp
}
