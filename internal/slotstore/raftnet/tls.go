package raftnet

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/lni/dragonboat/v4/logger"
	"github.com/lni/dragonboat/v4/raftio"
)

var plog = logger.GetLogger("raftnet")

// Bounds of the Raft port's TLS server.
const (
	// handshakeTimeout bounds one TLS handshake: a connection that has not
	// presented a valid client certificate by then is dropped.
	handshakeTimeout = 5 * time.Second
	// maxHandshakes bounds the handshakes in progress, maxSourceHandshakes
	// those of one source address; a connection beyond either is closed at
	// once (raw connections cannot pile up goroutines, and one host cannot
	// take every slot from the nodes).
	maxHandshakes       = 64
	maxSourceHandshakes = 8
	keepAlive           = 10 * time.Second
	// acceptBackoff is the pause after a failed Accept (out of file
	// descriptors, say) before the next; the error is logged once a pause.
	acceptBackoff = 100 * time.Millisecond
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

	ln        net.Listener
	slots     chan struct{}
	mu        sync.Mutex
	conns     map[net.Conn]struct{}
	shaking   map[string]int // handshakes in progress per source address
	started   bool
	closed    bool
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
	acceptWg  sync.WaitGroup
}

// newTLSTransport wraps tcp, dragonboat's TCP transport built with its
// listen address moved to loopback, to serve addr with cfg.
func newTLSTransport(tcp raftio.ITransport, addr string, cfg *tls.Config) *tlsTransport {
	// serveConn is a method of the concrete *transport.TCP: tcp must be
	// one, or the pointer below would be read as something it is not.
	if got := reflect.TypeOf(tcp).String(); got != "*transport.TCP" {
		panic("raftnet: dragonboat's TCP transport is a " + got + ", not *transport.TCP: check tcpServeConn against the pinned module")
	}
	self := reflect.ValueOf(tcp).UnsafePointer()
	return &tlsTransport{ITransport: tcp, addr: addr, cfg: cfg, slots: make(chan struct{}, maxHandshakes), conns: map[net.Conn]struct{}{},
		shaking: map[string]int{}, serve: func(c net.Conn) { tcpServeConn(self, c) }}
}

// Start starts dragonboat's transport, then listens on the Raft address.
// A failure leaves closing to dragonboat (it closes a transport whose
// Start failed), which Close makes safe to do once.
func (t *tlsTransport) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started || t.closed {
		return errors.New("raftnet: the Raft transport was started before")
	}
	t.started = true
	if err := t.ITransport.Start(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", t.addr)
	if err != nil {
		return fmt.Errorf("raftnet: listen on the Raft address: %w", err)
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
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: the port must not go deaf.
			plog.Errorf("raftnet: accept on %s: %v; retrying in %v", t.addr, err, acceptBackoff)
			time.Sleep(acceptBackoff)
			continue
		}
		select {
		case t.slots <- struct{}{}:
		default:
			_ = raw.Close() // too many handshakes in progress
			continue
		}
		src := sourceOf(raw)
		switch t.track(raw, src) {
		case trackClosed:
			<-t.slots
			_ = raw.Close()
			return
		case trackBusy:
			<-t.slots
			_ = raw.Close() // this source has its share of handshakes
			continue
		}
		t.wg.Add(1)
		go t.handle(raw, src)
	}
}

// sourceOf is the address a connection's handshakes count against: its IP,
// an IPv6 address by its /64 (one host has many).
func sourceOf(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

// handle runs the handshake, then dragonboat's loop, then closes the
// connection.
func (t *tlsTransport) handle(raw net.Conn, src string) {
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
	t.handshaken(src)
	<-t.slots
	if err != nil {
		return // no valid client certificate: nothing was read as Raft
	}
	_ = conn.SetDeadline(time.Time{})
	t.serve(conn)
}

type trackResult int

const (
	tracked trackResult = iota
	trackClosed
	trackBusy
)

func (t *tlsTransport) track(c net.Conn, src string) trackResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return trackClosed
	}
	if t.shaking[src] >= maxSourceHandshakes {
		return trackBusy
	}
	t.shaking[src]++
	t.conns[c] = struct{}{}
	return tracked
}

// handshaken ends a handshake of src (done or failed).
func (t *tlsTransport) handshaken(src string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shaking[src]--; t.shaking[src] <= 0 {
		delete(t.shaking, src)
	}
}

func (t *tlsTransport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

// Close stops listening, closes every connection, waits for their
// goroutines and closes dragonboat's transport — once, however often it is
// called.
func (t *tlsTransport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		ln := t.ln
		t.mu.Unlock()
		if ln != nil {
			_ = ln.Close()
			t.acceptWg.Wait()
		}
		t.mu.Lock()
		for c := range t.conns {
			_ = c.Close()
		}
		t.mu.Unlock()
		t.wg.Wait()
		t.closeErr = t.ITransport.Close()
	})
	return t.closeErr
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
