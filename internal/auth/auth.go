// Package auth decides who may call the API: bearer tokens, each with one
// role. Roles are ordered — read < write < admin — and a token of a role may
// do everything the roles below it may. Reads of data need read, writes of
// data need write, and every cluster operation that changes something needs
// admin. Health, readiness, the contract and the docs need nothing.
//
// Tokens come from a file (one "role token" pair per line, # comments) or
// from SLOTMETA_TOKENS ("role:token,role:token"). They are compared in
// constant time over their SHA-256 digests, so neither a token's content nor
// its length leaks through timing. With no tokens configured, checking is
// off — and the server then refuses to listen beyond loopback.
//
// An Authenticator is immutable after New and safe for concurrent use.
package auth

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"strings"

	"slotmeta/internal/slotstore"
)

// Role is what a token may do.
type Role int

const (
	RoleNone  Role = 0
	RoleRead  Role = 1
	RoleWrite Role = 2
	RoleAdmin Role = 3
)

func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleWrite:
		return "write"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole parses read, write or admin.
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "read":
		return RoleRead, nil
	case "write":
		return RoleWrite, nil
	case "admin":
		return RoleAdmin, nil
	}
	return RoleNone, fmt.Errorf("auth: unknown role %q (want read, write or admin)", s)
}

// MinTokenLength is the shortest token accepted.
const MinTokenLength = 16

type entry struct {
	digest [sha256.Size]byte
	role   Role
}

// Authenticator checks tokens.
type Authenticator struct {
	tokens []entry
}

// New builds an authenticator from token → role.
func New(tokens map[string]Role) (*Authenticator, error) {
	a := &Authenticator{}
	for tok, role := range tokens {
		if len(tok) < MinTokenLength {
			return nil, fmt.Errorf("auth: a %s token is shorter than %d characters", role, MinTokenLength)
		}
		if role < RoleRead || role > RoleAdmin {
			return nil, fmt.Errorf("auth: bad role %d", role)
		}
		a.tokens = append(a.tokens, entry{digest: sha256.Sum256([]byte(tok)), role: role})
	}
	return a, nil
}

// Enabled reports whether any token is configured.
func (a *Authenticator) Enabled() bool { return a != nil && len(a.tokens) > 0 }

// RoleOf returns the role of token, RoleNone if it matches none. Every
// configured token is compared, whatever matches, in constant time.
func (a *Authenticator) RoleOf(token string) Role {
	d := sha256.Sum256([]byte(token))
	role := RoleNone
	for _, e := range a.tokens {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			role = e.role
		}
	}
	return role
}

// CookieName is the console's session cookie (it holds the token).
const CookieName = "slotmeta_token"

// TokenOf extracts the bearer token of r (the Authorization header, else
// the console cookie).
func TokenOf(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return c.Value
	}
	return ""
}

// Require checks that r carries a token of at least role. It answers nil
// when checking is off.
func (a *Authenticator) Require(r *http.Request, role Role) error {
	if !a.Enabled() || role == RoleNone {
		return nil
	}
	tok := TokenOf(r)
	if tok == "" {
		return slotstore.Errorf(slotstore.CodeUnauthenticated, "a bearer token is required")
	}
	got := a.RoleOf(tok)
	if got == RoleNone {
		return slotstore.Errorf(slotstore.CodeUnauthenticated, "the token is not valid")
	}
	if got < role {
		return slotstore.Errorf(slotstore.CodePermissionDenied, "this needs the %s role; the token has %s", role, got)
	}
	return nil
}

// Parse reads "role token" lines (blank lines and # comments ignored).
func Parse(r io.Reader) (map[string]Role, error) {
	out := map[string]Role{}
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("auth: line %d: want a role and a token", line)
		}
		role, err := ParseRole(f[0])
		if err != nil {
			return nil, fmt.Errorf("auth: line %d: %w", line, err)
		}
		if _, dup := out[f[1]]; dup {
			return nil, fmt.Errorf("auth: line %d: a token is listed twice", line)
		}
		out[f[1]] = role
	}
	return out, sc.Err()
}

// ParseEnv reads "role:token,role:token".
func ParseEnv(s string) (map[string]Role, error) {
	out := map[string]Role{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		r, tok, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("auth: %q: want role:token", "…")
		}
		role, err := ParseRole(r)
		if err != nil {
			return nil, err
		}
		out[tok] = role
	}
	return out, nil
}

// RequiredRole is the role a request needs: nothing for health, readiness,
// the contract, the docs and the console's own pages (the console checks
// its actions itself); read for other reads; admin for every change under
// /v1/cluster; write for every other change.
func RequiredRole(r *http.Request) Role {
	p := r.URL.Path
	switch {
	case p == "/healthz" || p == "/readyz" || p == "/openapi.yaml" || p == "/docs" || strings.HasPrefix(p, "/docs/"),
		p == "/console" || strings.HasPrefix(p, "/console/"):
		return RoleNone
	case r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions:
		return RoleRead
	case strings.HasPrefix(p, "/v1/cluster"):
		if p == "/v1/cluster/routes/resolve" {
			return RoleRead // a read that takes a body
		}
		return RoleAdmin
	}
	return RoleWrite
}
