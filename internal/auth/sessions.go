package auth

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// The console signs a browser in with a session: the cookie holds a random
// session id, never the token, and only the console takes it — the API
// reads credentials from the Authorization header alone, so a cookie that
// leaks (or that a page on another port of the same host could send) opens
// no API call. The session keeps the token it was opened with on the
// server, and every request checks that token again, so a token removed by
// a reload ends its sessions at once.

// SessionCookie is the console's session cookie.
const SessionCookie = "slotmeta_session"

// SessionsConfig bounds the sessions a node keeps.
type SessionsConfig struct {
	// TTL is how long a session lives (default 12 h).
	TTL time.Duration
	// Max bounds the sessions kept (default 10 000); when full, expired
	// ones go first, then the oldest.
	Max int
	// Now is the clock (tests).
	Now func() time.Time
}

// Sessions are the console's sessions on this node (in memory: a restart,
// or another node, asks to sign in again).
//
// Concurrency contract: safe for concurrent use; one mutex guards the map.
type Sessions struct {
	cfg  SessionsConfig
	mu   sync.Mutex
	m    map[string]session
	next uint64 // sessions opened: the order of those ending at once
}

type session struct {
	token   string
	expires time.Time
	seq     uint64
}

// NewSessions returns an empty set with cfg's defaults filled in.
func NewSessions(cfg SessionsConfig) *Sessions {
	if cfg.TTL <= 0 {
		cfg.TTL = 12 * time.Hour
	}
	if cfg.Max <= 0 {
		cfg.Max = 10_000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sessions{cfg: cfg, m: map[string]session{}}
}

// TTL is how long a session lives.
func (s *Sessions) TTL() time.Duration { return s.cfg.TTL }

// Open starts a session for token and returns its id.
func (s *Sessions) Open(token string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b)
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.cfg.Max {
		s.evict(now)
	}
	s.next++
	s.m[id] = session{token: token, expires: now.Add(s.cfg.TTL), seq: s.next}
	return id
}

// evict drops the expired sessions, or if none, the one ending first (of
// those ending at once, the first opened: not the map's random order).
func (s *Sessions) evict(now time.Time) {
	var oldest string
	var first session
	for id, ss := range s.m {
		if !now.Before(ss.expires) {
			delete(s.m, id)
			continue
		}
		if oldest == "" || ss.expires.Before(first.expires) || ss.expires.Equal(first.expires) && ss.seq < first.seq {
			oldest, first = id, ss
		}
	}
	if len(s.m) >= s.cfg.Max && oldest != "" {
		delete(s.m, oldest)
	}
}

// Token is the token of the live session id ("" when none is).
func (s *Sessions) Token(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[id]
	if !ok {
		return ""
	}
	if !s.cfg.Now().Before(ss.expires) {
		delete(s.m, id)
		return ""
	}
	return ss.token
}

// Close ends session id.
func (s *Sessions) Close(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// Len is how many sessions are kept (expired ones until they are found).
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// WithSession returns r carrying its session's token as a bearer token, for
// the console's own checks; r itself when it has an Authorization header,
// no session cookie, or a session that ended (then also ended reports it,
// so that the cookie can be dropped).
func (s *Sessions) WithSession(r *http.Request) (_ *http.Request, ended bool) {
	if r.Header.Get("Authorization") != "" {
		return r, false
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return r, false
	}
	tok := s.Token(c.Value)
	if tok == "" {
		return r, true
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+tok)
	return r2, false
}
