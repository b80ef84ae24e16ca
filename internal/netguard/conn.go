package netguard

import (
	"container/list"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
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
	l   *Listener
	src string

	// until is the end of the grace in Unix nanoseconds; 0: no grace now
	// (proven, no Unproven configured, or a request in progress: ConnState).
	until  atomic.Int64
	proven atomic.Bool

	mu        sync.Mutex // orders deadline changes
	asked     time.Time  // the read deadline the owner asked for last
	closeOnce sync.Once
	closeErr  error

	// Guarded by l.mu.
	elem     *list.Element // on l.unproven while not proven
	released bool          // counted out (closed or evicted)
}

func newConn(c net.Conn, l *Listener, src string) *Conn {
	gc := &Conn{Conn: c, l: l, src: src}
	if l.cfg.Unproven > 0 {
		until := l.cfg.Now().Add(l.cfg.Unproven)
		gc.until.Store(until.UnixNano())
		_ = c.SetReadDeadline(until)
	} else {
		gc.proven.Store(true)
	}
	return gc
}

// graceEnd is the end of the grace now (zero: none).
func (c *Conn) graceEnd() time.Time {
	if c.proven.Load() {
		return time.Time{}
	}
	if u := c.until.Load(); u != 0 {
		return time.Unix(0, u)
	}
	return time.Time{}
}

// Prove lifts the grace for good: reads keep the deadlines their owner
// asks for from now on (the last one asked is put back at once), and the
// connection is no longer the first to go when a bound is reached.
func (c *Conn) Prove() {
	if c.proven.Swap(true) {
		return
	}
	c.l.proven(c)
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.Conn.SetReadDeadline(c.asked)
}

// Proven reports whether the connection proved itself.
func (c *Conn) Proven() bool { return c.proven.Load() }

// suspend stops the grace while a request is served (net/http reports the
// connection active), so that a request that needs no credentials — a
// health check, a console page — is not cut while it runs.
func (c *Conn) suspend() {
	if c.proven.Load() || c.until.Swap(0) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.Conn.SetReadDeadline(c.asked)
}

// rearm starts the grace again when the connection goes idle.
func (c *Conn) rearm() {
	if c.proven.Load() || c.l.cfg.Unproven <= 0 {
		return
	}
	until := c.l.cfg.Now().Add(c.l.cfg.Unproven)
	c.until.Store(until.UnixNano())
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.asked
	if t.IsZero() || t.After(until) {
		t = until
	}
	_ = c.Conn.SetReadDeadline(t)
}

// Read reads from the connection; past the grace, unproven, it fails with
// a read error wrapping ErrUnproven.
func (c *Conn) Read(p []byte) (int, error) {
	if end := c.graceEnd(); !end.IsZero() && !c.l.cfg.Now().Before(end) {
		return 0, c.unprovenErr()
	}
	n, err := c.Conn.Read(p)
	if err != nil {
		if end := c.graceEnd(); !end.IsZero() && !c.l.cfg.Now().Before(end) {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return n, c.unprovenErr()
			}
		}
	}
	return n, err
}

// unprovenErr is a read error (net/http closes the connection without an
// answer) that is not a timeout (dragonboat's loop retries timeouts).
func (c *Conn) unprovenErr() error {
	c.l.unprovenClosed.Add(1)
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: ErrUnproven}
}

// SetReadDeadline sets the read deadline, pulled in to the end of the
// grace while one runs.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = t
	if end := c.graceEnd(); !end.IsZero() && (t.IsZero() || t.After(end)) {
		t = end
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
		c.l.release(c)
	})
	return c.closeErr
}

// CloseWrite half-closes the connection where the one underneath can (so
// net/http still sends its FIN after an answer whose request body it left
// unread, and the client reads the answer instead of a reset).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom lets the connection underneath copy from r (sendfile for files).
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
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

// ConnState is an http.Server.ConnState that holds the grace while a
// request is served and starts it again when the connection goes idle.
func ConnState(c net.Conn, s http.ConnState) {
	gc := find(c)
	if gc == nil {
		return
	}
	switch s {
	case http.StateActive:
		gc.suspend()
	case http.StateIdle:
		gc.rearm()
	}
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
