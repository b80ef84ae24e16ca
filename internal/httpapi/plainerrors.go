package httpapi

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Every answer in the contract: an error the server emits is the one error
// JSON, whoever made it. Two kinds do not come from our handlers:
//
//   - handlers mounted under the router that answer with net/http's
//     helpers (http.Error, http.NotFound, http.FileServer: the console's
//     unknown pages, the docs' unknown files) — jsonErrors rewrites them;
//   - net/http's server itself, for a request it cannot even parse (a
//     header block past MaxHeaderBytes: 431; a malformed request line,
//     header or Host: 400; an unknown Transfer-Encoding: 501), written
//     straight to the connection before any handler runs — CannedErrors
//     rewrites those on a plain-HTTP listener, and CannedErrorsTLS on a
//     TLS one (it terminates TLS itself, so that the rewriting sees the
//     plaintext).

// jsonErrors makes h's plain-text error answers the error JSON.
func (a *api) jsonErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&plainErrorWriter{ResponseWriter: w, a: a, r: r}, r)
	})
}

// plainErrorWriter turns a text/plain status of 400 and above into the
// error JSON and drops the text that follows.
type plainErrorWriter struct {
	http.ResponseWriter
	a         *api
	r         *http.Request
	swallowed bool
	wrote     bool
}

func (p *plainErrorWriter) WriteHeader(status int) {
	if p.wrote {
		return
	}
	p.wrote = true
	ct := p.Header().Get("Content-Type")
	if status < 400 || !strings.HasPrefix(ct, "text/plain") { // http.Error sets it; a page of our own does not say text/plain
		p.ResponseWriter.WriteHeader(status)
		return
	}
	p.swallowed = true
	h := p.Header()
	h.Del("Content-Type")
	h.Del("Content-Length")
	h.Del("X-Content-Type-Options")
	p.a.writeErrorStatus(p.ResponseWriter, p.r, status, &slotstore.Error{Code: codeForStatus(status), Message: statusMessage(status, p.r)})
}

func (p *plainErrorWriter) Write(b []byte) (int, error) {
	if !p.wrote {
		p.WriteHeader(http.StatusOK)
	}
	if p.swallowed {
		return len(b), nil
	}
	return p.ResponseWriter.Write(b)
}

func (p *plainErrorWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// codeForStatus is the error code an error status of another handler is
// answered with: the table's own code where one maps to it.
func codeForStatus(status int) slotstore.Code {
	switch status {
	case http.StatusNotFound:
		return slotstore.CodeNotFound
	case http.StatusUnauthorized:
		return slotstore.CodeUnauthenticated
	case http.StatusForbidden:
		return slotstore.CodePermissionDenied
	case http.StatusRequestEntityTooLarge, http.StatusRequestHeaderFieldsTooLarge:
		return slotstore.CodePayloadTooLarge
	case http.StatusTooManyRequests:
		return slotstore.CodeRateLimited
	}
	if status >= 500 && status != http.StatusNotImplemented { // 501: a transfer encoding the client should not have sent
		return slotstore.CodeInternal
	}
	return slotstore.CodeInvalidArgument
}

func statusMessage(status int, r *http.Request) string {
	switch status {
	case http.StatusNotFound:
		return "no such page or file: " + r.URL.EscapedPath()
	case http.StatusMethodNotAllowed:
		return "method " + r.Method + " is not allowed on " + r.URL.EscapedPath()
	}
	return strings.ToLower(http.StatusText(status))
}

// CannedErrors wraps a plain-HTTP listener so that the answers net/http's
// server writes itself for requests it cannot parse are the error JSON.
func CannedErrors(ln net.Listener) net.Listener { return cannedListener{ln} }

type cannedListener struct{ net.Listener }

func (l cannedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return cannedConn{c}, nil
}

type cannedConn struct{ net.Conn }

// NetConn is the connection underneath (netguard finds its own there).
func (c cannedConn) NetConn() net.Conn { return c.Conn }

// CloseWrite half-closes where the connection underneath can: net/http
// sends its FIN that way after an answer whose request body it left unread.
func (c cannedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// canned matches net/http's whole answer to a request it could not parse
// (net/http/server.go, (*conn).serve: "HTTP/1.1 " + status + errorHeaders +
// text, one write to the connection). A handler's answer never has this
// header order: net/http sorts a response's headers, Connection first.
var canned = regexp.MustCompile(`\AHTTP/1\.1 ([0-9]{3}) [^\r\n]*\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n(.*)\z`)

func (c cannedConn) Write(b []byte) (int, error) {
	// Only an error status can be canned: a 2xx/3xx answer (nearly every
	// write) skips the match.
	if len(b) < 10 || b[9] != '4' && b[9] != '5' {
		return c.Conn.Write(b)
	}
	m := canned.FindSubmatch(b)
	if m == nil {
		return c.Conn.Write(b)
	}
	status, _ := strconv.Atoi(string(m[1]))
	msg := strings.TrimSpace(string(m[2]))
	// "400 Bad Request: malformed Host header" → "malformed Host header".
	if _, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, string(m[1])+" ") {
		msg = rest
	}
	if status == http.StatusRequestHeaderFieldsTooLarge {
		msg = "request headers too large"
	}
	if _, err := c.Conn.Write(rawErrorAnswer("HTTP/1.1", status, codeForStatus(status), msg)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// rawErrorAnswer is a whole HTTP answer carrying the error JSON, for a
// connection no handler serves (it closes after it).
func rawErrorAnswer(proto string, status int, code slotstore.Code, msg string) []byte {
	body, _ := json.Marshal(errorBody{Error: errorJSON{Code: code, Message: msg}})
	var out bytes.Buffer
	out.WriteString(proto + " " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	out.WriteString("Connection: close\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	out.Write(body)
	return out.Bytes()
}
