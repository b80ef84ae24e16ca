package auth

import (
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// LimiterConfig bounds failed authentications per source address.
type LimiterConfig struct {
	// Rate is how many failures per second a source may sustain (default 1);
	// Burst how many it may have in a row first (default 10).
	Rate  rate.Limit
	Burst int
	// MaxSources bounds the sources tracked (default 10 000); when full,
	// the tracked set starts over (an attacker spraying addresses gains a
	// fresh burst, nobody is locked out for good).
	MaxSources int
	// Now is the clock (tests).
	Now func() time.Time
}

func (c LimiterConfig) withDefaults() LimiterConfig {
	if c.Rate == 0 {
		c.Rate = 1
	}
	if c.Burst == 0 {
		c.Burst = 10
	}
	if c.MaxSources == 0 {
		c.MaxSources = 10_000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Limiter counts failed authentications per source address (a token bucket
// each, golang.org/x/time/rate). A source whose bucket is empty is refused
// before its credentials are even looked at — valid ones too — until the
// bucket refills: that is what makes guessing slow.
//
// Concurrency contract: safe for concurrent use; one mutex guards the map.
type Limiter struct {
	cfg     LimiterConfig
	mu      sync.Mutex
	sources map[string]*rate.Limiter
}

// NewLimiter returns a limiter with cfg's defaults filled in.
func NewLimiter(cfg LimiterConfig) *Limiter {
	return &Limiter{cfg: cfg.withDefaults(), sources: map[string]*rate.Limiter{}}
}

// Source is the address a request's failures count against: the TCP peer's
// IP (forwarding headers are not trusted: anyone could set them).
func Source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Blocked reports whether source must wait, and for how long, before its
// next attempt is looked at.
func (l *Limiter) Blocked(source string) (time.Duration, bool) {
	if l == nil {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.sources[source]
	if lim == nil {
		return 0, false
	}
	now := l.cfg.Now()
	if lim.TokensAt(now) >= 1 {
		return 0, false
	}
	wait := time.Duration(float64(time.Second) * (1 - lim.TokensAt(now)) / float64(l.cfg.Rate))
	return wait, true
}

// Failed records a failed authentication of source.
func (l *Limiter) Failed(source string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.sources[source]
	if lim == nil {
		if len(l.sources) >= l.cfg.MaxSources {
			clear(l.sources)
		}
		lim = rate.NewLimiter(l.cfg.Rate, l.cfg.Burst)
		l.sources[source] = lim
	}
	lim.AllowN(l.cfg.Now(), 1)
}

// RetryAfterSeconds is wait rounded up to whole seconds (at least 1), for
// the Retry-After header.
func RetryAfterSeconds(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
