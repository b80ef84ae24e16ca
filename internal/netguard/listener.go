package netguard

import (
	"container/list"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Config bounds one listener.
type Config struct {
	// Name names the listener in logs and metrics ("api", "peer", "raft").
	Name string
	// MaxConns bounds the connections open at once (required).
	MaxConns int
	// MaxPerSource bounds those of one source address (default MaxConns/4,
	// at least 1).
	MaxPerSource int
	// Unproven is how long a connection may stay open before it proves
	// itself (zero: no limit).
	Unproven time.Duration
	// Logger gets accept errors, at most one line a second (default
	// slog.Default()).
	Logger *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.MaxPerSource <= 0 {
		c.MaxPerSource = max(1, c.MaxConns/4)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports a config that cannot bound anything.
func (c Config) Validate() error {
	if c.MaxConns <= 0 {
		return errors.New("netguard: MaxConns must be positive")
	}
	if c.MaxPerSource < 0 || c.Unproven < 0 {
		return errors.New("netguard: negative bound")
	}
	return nil
}

// Stats counts what a listener did; read it with Listener.Stats.
type Stats struct {
	Open           int64 // connections open now
	Accepted       int64 // connections admitted
	RefusedTotal   int64 // closed at once: MaxConns reached
	RefusedSource  int64 // closed at once: MaxPerSource reached
	UnprovenClosed int64 // reads refused because the grace ended unproven
	Evicted        int64 // unproven connections closed to make room at a bound
	AcceptErrors   int64 // Accept errors retried
}

// Listener is a net.Listener with bounded connections (see the package doc).
type Listener struct {
	inner net.Listener
	cfg   Config

	mu       sync.Mutex
	open     int
	sources  map[string]int
	unproven *list.List // of *Conn not proven yet, oldest first: the first to go when a bound is reached

	accepted, refusedTotal, refusedSource, unprovenClosed, evicted, acceptErrors atomic.Int64
	lastLog                                                                      atomic.Int64 // unix nanos of the last accept-error line
}

// Wrap bounds ln by cfg.
func Wrap(ln net.Listener, cfg Config) (*Listener, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Listener{inner: ln, cfg: cfg.withDefaults(), sources: map[string]int{}, unproven: list.New()}, nil
}

// Listen listens on the TCP address addr, bounded by cfg.
func Listen(addr string, cfg Config) (*Listener, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return Wrap(ln, cfg)
}

// Accept returns the next connection within the bounds. Transient errors
// are retried with back-off; only a closed listener's error is returned.
func (l *Listener) Accept() (net.Conn, error) {
	pause := 5 * time.Millisecond
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			l.acceptErrors.Add(1)
			if now := time.Now().UnixNano(); now-l.lastLog.Load() >= int64(time.Second) {
				l.lastLog.Store(now)
				l.cfg.Logger.Warn("accept failed; retrying", "listener", l.cfg.Name, "err", err, "pause", pause)
			}
			time.Sleep(pause)
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 5 * time.Millisecond
		gc := newConn(c, l, SourceOf(c.RemoteAddr()))
		admitted, victim := l.admit(gc)
		if victim != nil {
			_ = victim.Conn.Close() // counted out already (admit)
		}
		if !admitted {
			_ = c.Close()
			continue
		}
		l.accepted.Add(1)
		return gc, nil
	}
}

// admit counts c in, or reports that a bound is reached. At a bound the
// oldest connection that has not proven itself — of c's source for the
// per-source bound, of any for the total — makes room (evicted: counted out
// here, to be closed by the caller), so that strangers holding connections
// cannot keep out the nodes and clients that prove themselves; only when
// every held connection is proven is c refused.
func (l *Listener) admit(c *Conn) (admitted bool, victim *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.sources[c.src] >= l.cfg.MaxPerSource:
		if victim = l.oldestUnproven(c.src); victim == nil {
			l.refusedSource.Add(1)
			return false, nil
		}
	case l.open >= l.cfg.MaxConns:
		if victim = l.oldestUnproven(""); victim == nil {
			l.refusedTotal.Add(1)
			return false, nil
		}
	}
	if victim != nil {
		l.evicted.Add(1)
		l.releaseLocked(victim)
	}
	l.open++
	l.sources[c.src]++
	if !c.proven.Load() {
		c.elem = l.unproven.PushBack(c)
	}
	return true, victim
}

// oldestUnproven is the oldest unproven connection (of src, unless "").
func (l *Listener) oldestUnproven(src string) *Conn {
	for e := l.unproven.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*Conn); src == "" || c.src == src {
			return c
		}
	}
	return nil
}

// proven takes c off the unproven list.
func (l *Listener) proven(c *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.elem != nil {
		l.unproven.Remove(c.elem)
		c.elem = nil
	}
}

// release counts a closed connection out (once: an evicted one already is).
func (l *Listener) release(c *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked(c)
}

func (l *Listener) releaseLocked(c *Conn) {
	if c.released {
		return
	}
	c.released = true
	if c.elem != nil {
		l.unproven.Remove(c.elem)
		c.elem = nil
	}
	l.open--
	if l.sources[c.src]--; l.sources[c.src] <= 0 {
		delete(l.sources, c.src)
	}
}

// Close closes the listener; open connections stay open (their owners
// close them).
func (l *Listener) Close() error { return l.inner.Close() }

// Addr is the listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Config is the listener's configuration, defaults filled in.
func (l *Listener) Config() Config { return l.cfg }

// Stats is what the listener did so far.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	return Stats{Open: int64(open), Accepted: l.accepted.Load(), RefusedTotal: l.refusedTotal.Load(),
		RefusedSource: l.refusedSource.Load(), UnprovenClosed: l.unprovenClosed.Load(), Evicted: l.evicted.Load(), AcceptErrors: l.acceptErrors.Load()}
}

// SourceOf is the address a connection counts against: Source of its
// remote address.
func SourceOf(a net.Addr) string { return Source(a.String()) }

// Source is the source a host:port address counts against: its IP, an IPv6
// address by its /64 (one host has many). Anything else counts as itself.
func Source(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}
