package auth

import (
	"cmp"
	"hash/fnv"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/slotmeta/slotmeta/internal/netguard"
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
	// Logger gets each failure and each lockout (at most logRate lines a
	// second, the rest counted in the next line); nil: not logged.
	Logger *slog.Logger
}

func (c LimiterConfig) withDefaults() LimiterConfig {
	c.Rate = cmp.Or(c.Rate, 1)
	c.Burst = cmp.Or(c.Burst, 10)
	c.MaxSources = cmp.Or(c.MaxSources, 10_000)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Limiter counts failed authentications per source address (a token bucket
// each, golang.org/x/time/rate). A source whose bucket is empty is refused
// before its credentials are even looked at — valid ones too — until the
// bucket refills: that is what makes guessing slow. The check and the count
// happen under one lock of the source's stripe (Guard), so guesses sent in
// parallel cannot all pass before the first failure is counted.
//
// Concurrency contract: safe for concurrent use. Sources hash onto a fixed
// set of stripes, each with its own mutex and map; a credential lookup (a
// few microseconds) runs under its stripe's lock.
type Limiter struct {
	cfg     LimiterConfig
	stripes [limiterStripes]stripe

	failures, lockouts atomic.Uint64
	logLines           *rate.Limiter
	unlogged           atomic.Uint64
}

// logRate bounds the lines the limiter logs (a flood of guesses must not
// flood the log): 5 a second, 20 in a burst.
const (
	logRate  = 5
	logBurst = 20
)

const limiterStripes = 64

type stripe struct {
	mu      sync.Mutex
	sources map[string]*rate.Limiter
}

// NewLimiter returns a limiter with cfg's defaults filled in.
func NewLimiter(cfg LimiterConfig) *Limiter {
	l := &Limiter{cfg: cfg.withDefaults(), logLines: rate.NewLimiter(logRate, logBurst)}
	for i := range l.stripes {
		l.stripes[i].sources = map[string]*rate.Limiter{}
	}
	return l
}

// Source is the address a request's failures count against: the TCP peer's
// IP, an IPv6 address by its /64 (one host has many); forwarding headers are
// not trusted: anyone could set them.
func Source(r *http.Request) string { return netguard.Source(r.RemoteAddr) }

func (l *Limiter) stripe(source string) *stripe {
	h := fnv.New32a()
	_, _ = h.Write([]byte(source))
	return &l.stripes[h.Sum32()%limiterStripes]
}

// Guard runs check — the credential lookup, true when it passed — for
// source unless source is out of budget; a failed check spends budget. It
// returns the check's verdict, or blocked with how long to wait.
func (l *Limiter) Guard(source string, check func() bool) (passed bool, wait time.Duration, blocked bool) {
	if l == nil {
		return check(), 0, false
	}
	s := l.stripe(source)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := l.cfg.Now()
	lim := s.sources[source]
	if lim != nil {
		if tokens := lim.TokensAt(now); tokens < 1 {
			return false, time.Duration(float64(time.Second) * (1 - tokens) / float64(l.cfg.Rate)), true
		}
	}
	if check() {
		return true, 0, false
	}
	if lim == nil {
		l.makeRoom(s, now)
		lim = rate.NewLimiter(l.cfg.Rate, l.cfg.Burst)
		s.sources[source] = lim
	}
	lim.AllowN(now, 1)
	l.failures.Add(1)
	lockedOut := lim.TokensAt(now) < 1
	if lockedOut {
		l.lockouts.Add(1)
	}
	l.log(source, lockedOut)
	return false, 0, false
}

// log notes a failed authentication of source, and its lockout.
func (l *Limiter) log(source string, lockedOut bool) {
	if l.cfg.Logger == nil {
		return
	}
	if !l.logLines.Allow() {
		l.unlogged.Add(1)
		return
	}
	skipped := l.unlogged.Swap(0)
	if lockedOut {
		l.cfg.Logger.Warn("authentication failed; the source is locked out until its budget refills", "source", source,
			"failures_not_logged", skipped)
		return
	}
	l.cfg.Logger.Info("authentication failed", "source", source, "failures_not_logged", skipped)
}

// Failures counts the failed authentications checked; Lockouts those after
// which their source was out of budget.
func (l *Limiter) Failures() uint64 { return l.failures.Load() }

// Lockouts: see Failures.
func (l *Limiter) Lockouts() uint64 { return l.lockouts.Load() }

// makeRoom keeps a stripe within its share of MaxSources: sources whose
// budget refilled are forgotten first (they owe nothing); only if none has,
// the stripe starts over.
func (l *Limiter) makeRoom(s *stripe, now time.Time) {
	if len(s.sources) < max(1, l.cfg.MaxSources/limiterStripes) {
		return
	}
	for src, lim := range s.sources {
		if lim.TokensAt(now) >= float64(l.cfg.Burst) {
			delete(s.sources, src)
		}
	}
	if len(s.sources) >= max(1, l.cfg.MaxSources/limiterStripes) {
		clear(s.sources)
	}
}

// RetryAfterSeconds is wait rounded up to whole seconds (at least 1), for
// the Retry-After header.
func RetryAfterSeconds(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
