package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// CannedErrorsTLS is CannedErrors for the API over TLS: it terminates TLS
// itself (config cfg, a handshake bounded by handshakeTimeout) and hands
// net/http a connection that writes plaintext through the same rewriting
// as the plain listener.
//
// Why not http.Server.ServeTLS: net/http writes its canned answers into
// the *tls.Conn, where no wrapper sees them, and over HTTP/2 its answer to
// headers past the limit is HTML written by x/net's own handler. So the
// API over TLS speaks HTTP/1.1 only (cfg's NextProtos is set to it), and
// the connection net/http serves is ours: net/http still fills
// Request.TLS from it, as it does for any connection with a
// ConnectionState method (net/http/server.go, (*conn).serve).
//
// A client that speaks plain HTTP to the TLS port is answered the error
// JSON (400) on the raw connection, as net/http answers it in text.
//
// cfg must not be changed after the call.
func CannedErrorsTLS(ln net.Listener, cfg *tls.Config, handshakeTimeout time.Duration) net.Listener {
	cfg.NextProtos = []string{"http/1.1"}
	return cannedTLSListener{Listener: ln, cfg: cfg, timeout: handshakeTimeout}
}

type cannedTLSListener struct {
	net.Listener
	cfg     *tls.Config
	timeout time.Duration
}

// Accept wraps the next connection; the handshake runs later, on the
// connection's own goroutine (ConnectionState), never in the accept loop.
func (l cannedTLSListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := tls.Server(c, l.cfg)
	return &cannedTLSConn{cannedConn: cannedConn{tc}, tc: tc, timeout: l.timeout}, nil
}

// cannedTLSConn is a server-side TLS connection whose plaintext answers
// pass cannedConn's rewriting.
type cannedTLSConn struct {
	cannedConn
	tc      *tls.Conn
	timeout time.Duration
	once    sync.Once
	err     error // the handshake's
}

// handshake runs the TLS handshake once, within the timeout. net/http
// asks for ConnectionState before it reads the first request — that is
// where it runs — and every Read waits for it.
func (c *cannedTLSConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		c.err = c.tc.HandshakeContext(ctx) // the context's end interrupts it
		var re tls.RecordHeaderError
		if errors.As(c.err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			answerPlainHTTP(re.Conn)
		}
	})
	return c.err
}

// ConnectionState is the negotiated TLS state (net/http's Request.TLS),
// after the handshake.
func (c *cannedTLSConn) ConnectionState() tls.ConnectionState {
	_ = c.handshake()
	return c.tc.ConnectionState()
}

func (c *cannedTLSConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.tc.Read(b)
}

// looksLikeHTTP reports whether the first bytes of a "TLS record" are a
// plain HTTP request's (as net/http's tlsRecordHeaderLooksLikeHTTP).
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE":
		return true
	}
	return false
}

// answerPlainHTTP answers a plain HTTP request on the TLS port with the
// error JSON, and closes the connection.
func answerPlainHTTP(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(rawErrorAnswer("HTTP/1.0", http.StatusBadRequest, slotstore.CodeInvalidArgument,
		"client sent an HTTP request to an HTTPS server; use https://"))
	_ = c.Close()
}
