package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

func listen(t *testing.T, cfg Config) *Listener {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// acceptAll accepts until the listener closes, handing each connection
// to out.
func acceptAll(ln net.Listener, out chan<- net.Conn) {
	for {
		c, err := ln.Accept()
		if err != nil {
			close(out)
			return
		}
		out <- c
	}
}

func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedByPeer reports whether the server closed c (a read ends with EOF
// or a reset, not a timeout).
func closedByPeer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestBoundsTotalAndPerSource(t *testing.T) {
	ln := listen(t, Config{Name: "t", MaxConns: 3, MaxPerSource: 2})
	conns := make(chan net.Conn, 16)
	go acceptAll(ln, conns)

	a1 := dialFrom(t, "127.0.0.1", ln.Addr().String())
	a2 := dialFrom(t, "127.0.0.1", ln.Addr().String())
	held := []net.Conn{<-conns, <-conns}
	a3 := dialFrom(t, "127.0.0.1", ln.Addr().String()) // third of one source
	if !closedByPeer(a3) {
		t.Fatal("a source's third connection was not closed")
	}
	b1 := dialFrom(t, "127.0.0.2", ln.Addr().String()) // another source: admitted
	held = append(held, <-conns)
	b2 := dialFrom(t, "127.0.0.2", ln.Addr().String()) // total reached
	if !closedByPeer(b2) {
		t.Fatal("a connection past the total was not closed")
	}
	s := ln.Stats()
	if s.Open != 3 || s.RefusedSource != 1 || s.RefusedTotal != 1 {
		t.Fatalf("stats %+v, want 3 open, 1 refused per source, 1 in total", s)
	}
	// Closing one (twice: counted once) makes room for its source again.
	_ = held[0].Close()
	_ = held[0].Close()
	if got := ln.Stats().Open; got != 2 {
		t.Fatalf("open %d after a close, want 2", got)
	}
	a4 := dialFrom(t, "127.0.0.1", ln.Addr().String())
	c := <-conns
	if _, err := a4.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("admitted connection: %v", err)
	}
	_, _, _ = a1, a2, b1
}

func TestUnprovenConnectionIsClosedAfterItsGrace(t *testing.T) {
	ln := listen(t, Config{Name: "t", MaxConns: 8, Unproven: 100 * time.Millisecond})
	conns := make(chan net.Conn, 4)
	go acceptAll(ln, conns)
	dialFrom(t, "", ln.Addr().String())
	c := <-conns
	// The owner asks for a long deadline, then retries timeouts: the read
	// fails with a non-timeout error at the end of the grace instead.
	_ = c.SetReadDeadline(time.Now().Add(time.Hour))
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.Is(err, ErrUnproven) || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("read past the grace: %v, want ErrUnproven and no timeout", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("read returned after %v", waited)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, ErrUnproven) {
		t.Fatalf("second read: %v", err)
	}
	if ln.Stats().UnprovenClosed == 0 {
		t.Fatal("unproven reads not counted")
	}
}

func TestProvenConnectionKeepsItsDeadlines(t *testing.T) {
	ln := listen(t, Config{Name: "t", MaxConns: 8, Unproven: 50 * time.Millisecond})
	conns := make(chan net.Conn, 4)
	go acceptAll(ln, conns)
	cl := dialFrom(t, "", ln.Addr().String())
	c := <-conns
	_ = c.SetReadDeadline(time.Time{})
	ctx := ConnContext(context.Background(), c)
	Prove(ctx)
	if !c.(*Conn).Proven() {
		t.Fatal("Prove(ctx) did not prove the connection")
	}
	time.AfterFunc(200*time.Millisecond, func() { _, _ = cl.Write([]byte("y")) }) // well past the grace
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("proven connection: %v", err)
	}
}

// errListener fails Accept with EMFILE n times, then hands out one
// connection, then reports itself closed.
type errListener struct {
	mu    sync.Mutex
	fails int
	conn  net.Conn
}

func (e *errListener) Accept() (net.Conn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fails > 0 {
		e.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	if c := e.conn; c != nil {
		e.conn = nil
		return c, nil
	}
	return nil, net.ErrClosed
}
func (e *errListener) Close() error   { return nil }
func (e *errListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func TestAcceptErrorsAreRetriedNotReturned(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ln, err := Wrap(&errListener{fails: 3, conn: a}, Config{Name: "t", MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("Accept returned %v; transient errors must be retried", err)
	}
	if got := ln.Stats().AcceptErrors; got != 3 {
		t.Fatalf("accept errors %d, want 3", got)
	}
	_ = c.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("closed listener: %v", err)
	}
}

func TestBudget(t *testing.T) {
	for _, limit := range []uint64{256, 1024, 20000, 1 << 20} {
		b := BudgetFor(limit)
		if b.API.Max < minShare || b.Raft.Max < minShare || b.Peer.Max < minShare || b.API.PerSource < minPerSource {
			t.Errorf("%d: %v: a share under its floor", limit, b)
		}
		if limit >= 2048 && uint64(b.API.Max+b.Peer.Max+b.Raft.Max) > limit/2 {
			t.Errorf("%d: %v: connections may take more than half the descriptors", limit, b)
		}
	}
	if err := (Config{}).Validate(); err == nil {
		t.Error("a config without MaxConns validated")
	}
}

// TestUnprovenConnectionsMakeRoom: at a bound the oldest connection that has
// not proven itself is closed for the new one (of the same source for the
// per-source bound); proven ones are never closed, and when all held ones are
// proven the new one is refused.
func TestUnprovenConnectionsMakeRoom(t *testing.T) {
	ln := listen(t, Config{Name: "t", MaxConns: 3, MaxPerSource: 2, Unproven: time.Minute})
	conns := make(chan net.Conn, 16)
	go acceptAll(ln, conns)
	addr := ln.Addr().String()
	a1 := dialFrom(t, "127.0.0.1", addr)
	s1 := <-conns
	dialFrom(t, "127.0.0.1", addr)
	s2 := <-conns
	// A third of the source: a1 (the oldest, unproven) goes.
	dialFrom(t, "127.0.0.1", addr)
	s3 := <-conns
	if !closedByPeer(a1) {
		t.Fatal("the oldest unproven connection of the source was not closed")
	}
	if got := ln.Stats(); got.Evicted != 1 || got.Open != 2 {
		t.Fatalf("stats %+v, want 1 evicted and 2 open", got)
	}
	_ = s1
	// Proven connections stay: prove both held ones, then a third of the
	// source is refused.
	s2.(*Conn).Prove()
	s3.(*Conn).Prove()
	a4 := dialFrom(t, "127.0.0.1", addr)
	if !closedByPeer(a4) {
		t.Fatal("a connection past the bound was taken though every held one is proven")
	}
	if got := ln.Stats(); got.RefusedSource != 1 || got.Open != 2 {
		t.Fatalf("stats %+v, want 1 refused and 2 open", got)
	}
}

// TestGraceHeldWhileActive: net/http's ConnState holds the grace while a
// request is served and starts it anew when the connection is idle.
func TestGraceHeldWhileActive(t *testing.T) {
	ln := listen(t, Config{Name: "t", MaxConns: 8, Unproven: 100 * time.Millisecond})
	conns := make(chan net.Conn, 4)
	go acceptAll(ln, conns)
	cl := dialFrom(t, "", ln.Addr().String())
	c := <-conns
	ConnState(c, http.StateActive)
	_ = c.SetReadDeadline(time.Time{})
	time.AfterFunc(300*time.Millisecond, func() { _, _ = cl.Write([]byte("z")) }) // past the grace
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("read while active: %v", err)
	}
	ConnState(c, http.StateIdle)
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, ErrUnproven) {
		t.Fatalf("read when idle past the grace: %v", err)
	}
}
