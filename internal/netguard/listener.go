package netguard

import (
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
	// ProveAfterBytes, when positive, proves a connection once it has
	// delivered that many bytes.
	ProveAfterBytes int64
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
	if c.MaxPerSource < 0 || c.Unproven < 0 || c.ProveAfterBytes < 0 {
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
	AcceptErrors   int64 // Accept errors retried
}

// Listener is a net.Listener with bounded connections (see the package doc).
type Listener struct {
	inner net.Listener
	cfg   Config

	mu      sync.Mutex
	open    int
	sources map[string]int

	accepted, refusedTotal, refusedSource, unproven, acceptErrors atomic.Int64
	lastLog                                                       atomic.Int64 // unix nanos of the last accept-error line
}

// Wrap bounds ln by cfg.
func Wrap(ln net.Listener, cfg Config) (*Listener, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Listener{inner: ln, cfg: cfg.withDefaults(), sources: map[string]int{}}, nil
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
		src := SourceOf(c.RemoteAddr())
		if !l.admit(src) {
			_ = c.Close()
			continue
		}
		l.accepted.Add(1)
		return newConn(c, l, src), nil
	}
}

// admit counts a connection of src in, or reports that a bound is reached.
func (l *Listener) admit(src string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open >= l.cfg.MaxConns:
		l.refusedTotal.Add(1)
		return false
	case l.sources[src] >= l.cfg.MaxPerSource:
		l.refusedSource.Add(1)
		return false
	}
	l.open++
	l.sources[src]++
	return true
}

// release counts a closed connection of src out.
func (l *Listener) release(src string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.sources[src]--; l.sources[src] <= 0 {
		delete(l.sources, src)
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
		RefusedSource: l.refusedSource.Load(), UnprovenClosed: l.unproven.Load(), AcceptErrors: l.acceptErrors.Load()}
}

// SourceOf is the address a connection counts against: its IP, an IPv6
// address by its /64 (one host has many).
func SourceOf(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}
