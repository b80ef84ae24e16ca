package netguard

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrUnproven is the cause of the read error a connection gets once its
// grace ended before it proved itself.
var ErrUnproven = errors.New("netguard: connection did not authenticate in time")

// Conn is a connection a Listener admitted. It counts itself out when
// closed, and holds its reads to the grace until it is proven.
type Conn struct {
	net.Conn
	l     *Listener
	src   string
	until time.Time // end of the grace (zero: none)

	proven atomic.Bool
	read   atomic.Int64 // bytes delivered, until proven

	mu        sync.Mutex
	asked     time.Time // the read deadline the owner asked for last
	closeOnce sync.Once
	closeErr  error
}

func newConn(c net.Conn, l *Listener, src string) *Conn {
	gc := &Conn{Conn: c, l: l, src: src}
	if l.cfg.Unproven > 0 {
		gc.until = l.cfg.Now().Add(l.cfg.Unproven)
		_ = c.SetReadDeadline(gc.until)
	} else {
		gc.proven.Store(true)
	}
	return gc
}

// Prove lifts the grace: reads keep the deadlines their owner asks for
// from now on (the last one asked is put back at once).
func (c *Conn) Prove() {
	if c.proven.Swap(true) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.Conn.SetReadDeadline(c.asked)
}

// Proven reports whether the connection proved itself.
func (c *Conn) Proven() bool { return c.proven.Load() }

// Read reads from the connection; past the grace, unproven, it fails with
// a read error wrapping ErrUnproven.
func (c *Conn) Read(p []byte) (int, error) {
	if !c.proven.Load() && !c.l.cfg.Now().Before(c.until) {
		return 0, c.unprovenErr()
	}
	n, err := c.Conn.Read(p)
	if n > 0 && !c.proven.Load() && c.l.cfg.ProveAfterBytes > 0 && c.read.Add(int64(n)) >= c.l.cfg.ProveAfterBytes {
		c.Prove()
	}
	if err != nil && !c.proven.Load() && !c.l.cfg.Now().Before(c.until) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return n, c.unprovenErr()
		}
	}
	return n, err
}

// unprovenErr is a read error (net/http closes the connection without an
// answer) that is not a timeout (dragonboat's loop retries timeouts).
func (c *Conn) unprovenErr() error {
	c.l.unproven.Add(1)
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: ErrUnproven}
}

// SetReadDeadline sets the read deadline, pulled in to the end of the
// grace while the connection is unproven.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = t
	if !c.proven.Load() && (t.IsZero() || t.After(c.until)) {
		t = c.until
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets both deadlines, the read one as SetReadDeadline does.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// Close closes the connection and counts it out of its listener, once.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.Conn.Close()
		c.l.release(c.src)
	})
	return c.closeErr
}

// NetConn is the connection underneath.
func (c *Conn) NetConn() net.Conn { return c.Conn }

type connKey struct{}

// ConnContext is an http.Server.ConnContext that keeps the connection
// (under TLS too) where Prove(ctx) finds it.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if gc := find(c); gc != nil {
		return context.WithValue(ctx, connKey{}, gc)
	}
	return ctx
}

// Prove proves the connection of ctx (a request's context under a server
// whose ConnContext is ConnContext); without one it does nothing.
func Prove(ctx context.Context) {
	if gc, ok := ctx.Value(connKey{}).(*Conn); ok {
		gc.Prove()
	}
}

// ProveConn proves c, or the guarded connection under it (a TLS one).
func ProveConn(c net.Conn) {
	if gc := find(c); gc != nil {
		gc.Prove()
	}
}

// find is the *Conn in c's chain of wrappers (tls.Conn has NetConn), if any.
func find(c net.Conn) *Conn {
	for range 8 {
		switch v := c.(type) {
		case *Conn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}
