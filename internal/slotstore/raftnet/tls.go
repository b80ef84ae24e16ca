package raftnet

import (
	"crypto/tls"
	"net"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/lni/dragonboat/v4/raftio"
)

// Bounds of the Raft port's TLS server.
const (
	// handshakeTimeout bounds one TLS handshake: a connection that has not
	// presented a valid client certificate by then is dropped.
	handshakeTimeout = 5 * time.Second
	// maxHandshakes bounds the handshakes in progress; a connection beyond
	// it is closed at once (raw connections cannot pile up goroutines).
	maxHandshakes = 64
	keepAlive     = 10 * time.Second
)

// tlsTransport is dragonboat's TCP transport with the server side of its
// Raft port taken over: the node's own listener on the Raft address runs
// the TLS handshake with a config that reads the current certificate and
// CA pool at every handshake (certs.Reloader), so a reloaded certificate
// needs no restart and drops no connection; each connection that
// presented a valid client certificate is then served by dragonboat's own
// connection loop (its framing and checks). A connection without one is
// closed before any byte of it is read as Raft.
//
// dragonboat's transport still starts its own listener, on an ephemeral
// loopback port with the certificates it was started with; nothing dials
// it. Dialing stays dragonboat's: it reads the TLS files for every new
// connection, so it follows a rotation by itself.
//
// Concurrency contract: Start and Close are dragonboat's (once each); the
// accept loop and every connection's goroutine belong to the transport and
// end in Close.
type tlsTransport struct {
	raftio.ITransport // dragonboat's TCP transport: dialing, and the serving loop
	addr              string
	cfg               *tls.Config
	serve             func(net.Conn)

	ln       net.Listener
	slots    chan struct{}
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
	acceptWg sync.WaitGroup
}

// newTLSTransport wraps tcp, dragonboat's TCP transport built with its
// listen address moved to loopback, to serve addr with cfg.
func newTLSTransport(tcp raftio.ITransport, addr string, cfg *tls.Config) *tlsTransport {
	// serveConn is a method of the concrete *transport.TCP; tcp holds one.
	self := unsafe.Pointer(reflect.ValueOf(tcp).Pointer())
	return &tlsTransport{ITransport: tcp, addr: addr, cfg: cfg, slots: make(chan struct{}, maxHandshakes), conns: map[net.Conn]struct{}{},
		serve: func(c net.Conn) { tcpServeConn(self, c) }}
}

func (t *tlsTransport) Start() error {
	if err := t.ITransport.Start(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", t.addr)
	if err != nil {
		_ = t.ITransport.Close()
		return err
	}
	t.ln = ln
	t.acceptWg.Add(1)
	go t.accept()
	return nil
}

func (t *tlsTransport) accept() {
	defer t.acceptWg.Done()
	for {
		raw, err := t.ln.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return // closed
		}
		select {
		case t.slots <- struct{}{}:
		default:
			_ = raw.Close() // too many handshakes in progress
			continue
		}
		if !t.track(raw) {
			<-t.slots
			_ = raw.Close()
			return
		}
		t.wg.Add(1)
		go t.handle(raw)
	}
}

// handle runs the handshake, then dragonboat's loop, then closes the
// connection.
func (t *tlsTransport) handle(raw net.Conn) {
	defer t.wg.Done()
	defer t.untrack(raw)
	defer raw.Close()
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetKeepAlive(true)
		_ = tc.SetKeepAlivePeriod(keepAlive)
	}
	conn := tls.Server(raw, t.cfg)
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	err := conn.Handshake()
	<-t.slots
	if err != nil {
		return // no valid client certificate: nothing was read as Raft
	}
	_ = conn.SetDeadline(time.Time{})
	t.serve(conn)
}

func (t *tlsTransport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *tlsTransport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

func (t *tlsTransport) Close() error {
	if t.ln != nil {
		_ = t.ln.Close()
		t.acceptWg.Wait()
	}
	t.mu.Lock()
	t.closed = true
	for c := range t.conns {
		_ = c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return t.ITransport.Close()
}

// tcpServeConn is dragonboat's (*transport.TCP).serveConn: the loop that
// reads one connection's messages and chunks and hands them to the
// transport's handlers (its framing, checksums and size checks). Reached by
// name, like newTCPTransport (heard.go); its receiver is passed as the
// pointer it is. The signature must match the pinned module
// (internal/transport/tcp.go: func (t *TCP) serveConn(conn net.Conn)).
//
//go:linkname tcpServeConn github.com/lni/dragonboat/v4/internal/transport.(*TCP).serveConn
func tcpServeConn(t unsafe.Pointer, conn net.Conn)
