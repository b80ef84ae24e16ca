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

	"github.com/slotmeta/slotmeta/internal/netguard"
)

var plog = logger.GetLogger("raftnet")

// Bounds of the Raft port's server side.
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
	// plainGrace is how long a connection without TLS may stay open before
	// it delivered a well-formed frame: dragonboat's connection loop retries
	// read timeouts forever, so an idle stranger would otherwise keep its
	// connection (and descriptor) for good. A node that dials sends its
	// first message at once (it dials because it has one).
	plainGrace = 10 * time.Second
)

// serverTransport is dragonboat's TCP transport with the server side of its
// Raft port taken over: the node's own listener on the Raft address, bounded
// (netguard: connections in all and per source, a grace to prove itself,
// accept errors retried — dragonboat's own accept loop panics on any error,
// out of descriptors included, and that killed a node under an
// unauthenticated connection flood). With TLS it runs the handshake with a
// config that reads the current certificate and CA pool at every handshake
// (certs.Reloader), so a reloaded certificate needs no restart and drops no
// connection; a connection without a valid client certificate is closed
// before any byte of it is read as Raft. Each admitted connection is then
// served by dragonboat's own connection loop (its framing and checks).
//
// dragonboat's transport is never started: its Start only listens and
// accepts (internal/transport/tcp.go: (*TCP).Start), and nothing here needs
// that listener. Dialing stays dragonboat's (no Start needed): it reads the
// TLS files for every new connection, so it follows a rotation by itself.
//
// Concurrency contract: Start and Close are dragonboat's (once each); the
// accept loop and every connection's goroutine belong to the transport and
// end in Close.
type serverTransport struct {
	raftio.ITransport // dragonboat's TCP transport: dialing, and the serving loop
	addr              string
	cfg               *tls.Config // nil: plain TCP
	bounds            Bounds
	serve             func(net.Conn)

	ln        *netguard.Listener
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

// Bounds are the Raft port's connection bounds (netguard.Budget's share).
type Bounds struct {
	MaxConns, MaxPerSource int
	// Listening, when set, is handed the listener once it listens (its
	// metrics).
	Listening func(*netguard.Listener)
}

// newServerTransport wraps tcp, dragonboat's TCP transport, to serve addr
// (with cfg's TLS unless nil).
func newServerTransport(tcp raftio.ITransport, addr string, cfg *tls.Config, b Bounds) *serverTransport {
	// serveConn is a method of the concrete *transport.TCP: tcp must be
	// one, or the pointer below would be read as something it is not.
	if got := reflect.TypeOf(tcp).String(); got != "*transport.TCP" {
		panic("raftnet: dragonboat's TCP transport is a " + got + ", not *transport.TCP: check tcpServeConn against the pinned module")
	}
	if b.MaxConns <= 0 {
		b.MaxConns = 1024
	}
	self := reflect.ValueOf(tcp).UnsafePointer()
	return &serverTransport{ITransport: tcp, addr: addr, cfg: cfg, bounds: b, slots: make(chan struct{}, maxHandshakes), conns: map[net.Conn]struct{}{},
		shaking: map[string]int{}, serve: func(c net.Conn) { tcpServeConn(self, c) }}
}

// Start listens on the Raft address (dragonboat's own Start is not run:
// see the type's doc).
func (t *serverTransport) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started || t.closed {
		return errors.New("raftnet: the Raft transport was started before")
	}
	t.started = true
	// Proven by its first well-formed frame (frameguard.go), or with TLS by
	// its certificate.
	gc := netguard.Config{Name: "raft", MaxConns: t.bounds.MaxConns, MaxPerSource: t.bounds.MaxPerSource, Unproven: plainGrace}
	if t.cfg != nil {
		gc.Unproven = handshakeTimeout + time.Second
	}
	ln, err := netguard.Listen(t.addr, gc)
	if err != nil {
		return fmt.Errorf("raftnet: listen on the Raft address: %w", err)
	}
	t.ln = ln
	if t.bounds.Listening != nil {
		t.bounds.Listening(ln)
	}
	t.acceptWg.Add(1)
	go t.accept()
	return nil
}

// accept admits connections until the listener closes; netguard retries
// accept errors (out of descriptors, say), so the port never goes deaf.
func (t *serverTransport) accept() {
	defer t.acceptWg.Done()
	for {
		raw, err := t.ln.Accept()
		if err != nil {
			return // closed
		}
		if t.cfg == nil {
			if !t.trackPlain(raw) {
				_ = raw.Close()
				return
			}
			t.wg.Add(1)
			go t.handlePlain(raw)
			continue
		}
		select {
		case t.slots <- struct{}{}:
		default:
			_ = raw.Close() // too many handshakes in progress
			continue
		}
		src := netguard.SourceOf(raw.RemoteAddr())
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

// handlePlain serves a connection without TLS: dragonboat's loop, then
// close.
func (t *serverTransport) handlePlain(raw net.Conn) {
	defer t.wg.Done()
	defer t.untrack(raw)
	defer raw.Close()
	defer survive(raw)
	setKeepAlive(raw)
	t.serve(newFrameGuard(raw))
}

// survive keeps a connection's panic (in dragonboat's loop, on what a peer
// sent) from ending the process: the connection closes, the node lives.
func survive(c net.Conn) {
	if p := recover(); p != nil {
		plog.Errorf("raftnet: connection from %s ended in a panic: %v", c.RemoteAddr(), p)
	}
}

func setKeepAlive(c net.Conn) {
	if gc, ok := c.(*netguard.Conn); ok {
		c = gc.NetConn()
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetKeepAlive(true)
		_ = tc.SetKeepAlivePeriod(keepAlive)
	}
}

// handle runs the handshake, then dragonboat's loop, then closes the
// connection.
func (t *serverTransport) handle(raw net.Conn, src string) {
	defer t.wg.Done()
	defer t.untrack(raw)
	defer raw.Close()
	setKeepAlive(raw)
	conn := tls.Server(raw, t.cfg)
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	err := conn.Handshake()
	t.handshaken(src)
	<-t.slots
	if err != nil {
		return // no valid client certificate: nothing was read as Raft
	}
	netguard.ProveConn(raw)
	_ = conn.SetDeadline(time.Time{})
	defer survive(raw)
	t.serve(newFrameGuard(conn))
}

type trackResult int

const (
	tracked trackResult = iota
	trackClosed
	trackBusy
)

func (t *serverTransport) track(c net.Conn, src string) trackResult {
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

// trackPlain tracks a connection without a handshake; false once closed.
func (t *serverTransport) trackPlain(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

// handshaken ends a handshake of src (done or failed).
func (t *serverTransport) handshaken(src string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shaking[src]--; t.shaking[src] <= 0 {
		delete(t.shaking, src)
	}
}

func (t *serverTransport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

// Close stops listening, closes every connection, waits for their
// goroutines and closes dragonboat's transport — once, however often it is
// called.
func (t *serverTransport) Close() error {
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
