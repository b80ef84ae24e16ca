package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/slotmeta/slotmeta/internal/netguard"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// MinTokenLength is the shortest token accepted.
const MinTokenLength = 16

// Token is one API token: its secret, its role and the name the audit
// trail shows for it.
type Token struct {
	Name   string
	Role   Role
	Secret string
}

// Credentials are what an Authenticator accepts: tokens, and client
// certificate common names with their roles.
type Credentials struct {
	Tokens []Token
	Certs  map[string]Role // common name → role
}

// Via says how a request authenticated.
type Via string

// Ways a request authenticates.
const (
	ViaToken       Via = "token"
	ViaCertificate Via = "certificate"
	ViaOpen        Via = "open" // access control is off
)

// Identity is who made a request.
type Identity struct {
	Name string `json:"name"`
	Role Role   `json:"-"`
	Via  Via    `json:"via"`
}

type entry struct {
	digest [sha256.Size]byte
	role   Role
	name   string
}

type credentialSet struct {
	tokens []entry
	certs  map[string]Role
}

// Authenticator checks credentials. The zero value and nil accept every
// request (checking off).
type Authenticator struct {
	set atomic.Pointer[credentialSet]
}

// New builds an authenticator from token → role (tests; the order, and so
// the default names, follow the map's iteration).
func New(tokens map[string]Role) (*Authenticator, error) {
	var c Credentials
	for tok, role := range tokens {
		c.Tokens = append(c.Tokens, Token{Secret: tok, Role: role})
	}
	slices.SortFunc(c.Tokens, func(a, b Token) int { return strings.Compare(a.Secret, b.Secret) })
	return FromCredentials(c)
}

// FromCredentials builds an authenticator from c.
func FromCredentials(c Credentials) (*Authenticator, error) {
	set, err := build(c)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{}
	a.set.Store(set)
	return a, nil
}

// Swap replaces the credentials with those of b (a reload). Requests being
// checked finish against the set they started with.
func (a *Authenticator) Swap(b *Authenticator) {
	a.set.Store(b.set.Load())
}

func build(c Credentials) (*credentialSet, error) {
	set := &credentialSet{certs: map[string]Role{}}
	seen := map[[sha256.Size]byte]bool{}
	for i, t := range c.Tokens {
		if len(t.Secret) < MinTokenLength {
			return nil, fmt.Errorf("auth: a %s token is shorter than %d characters", t.Role, MinTokenLength)
		}
		if t.Role < RoleRead || t.Role > RoleAdmin {
			return nil, fmt.Errorf("auth: bad role %d", t.Role)
		}
		d := sha256.Sum256([]byte(t.Secret))
		if seen[d] {
			return nil, fmt.Errorf("auth: a token is listed twice")
		}
		seen[d] = true
		name := t.Name
		if name == "" {
			name = DefaultName(t.Role, i)
		}
		set.tokens = append(set.tokens, entry{digest: d, role: t.Role, name: name})
	}
	for cn, role := range c.Certs {
		if role < RoleRead || role > RoleAdmin {
			return nil, fmt.Errorf("auth: certificate %q: bad role %d", cn, role)
		}
		set.certs[cn] = role
	}
	return set, nil
}

// DefaultName names an unnamed token: its role and its position among the
// configured tokens (from 1: the tokens file's lines, then SLOTMETA_TOKENS)
// — nothing derived from the token itself, which the audit trail must not
// help anyone guess.
func DefaultName(role Role, index int) string {
	return fmt.Sprintf("%s-token-%d", role, index+1)
}

// Enabled reports whether any credential is configured.
func (a *Authenticator) Enabled() bool {
	if a == nil {
		return false
	}
	s := a.set.Load()
	return s != nil && (len(s.tokens) > 0 || len(s.certs) > 0)
}

// Counts reports how many tokens and certificate names are configured.
func (a *Authenticator) Counts() (tokens, certs int) {
	if a == nil {
		return 0, 0
	}
	if s := a.set.Load(); s != nil {
		return len(s.tokens), len(s.certs)
	}
	return 0, 0
}

// RoleOf returns the role of token, RoleNone if it matches none.
func (a *Authenticator) RoleOf(token string) Role { return a.lookup(token).Role }

// lookup compares token with every configured token, whatever matches, in
// constant time.
func (a *Authenticator) lookup(token string) Identity {
	id := Identity{Via: ViaToken}
	if a == nil {
		return id
	}
	s := a.set.Load()
	if s == nil {
		return id
	}
	d := sha256.Sum256([]byte(token))
	for _, e := range s.tokens {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			id.Role, id.Name = e.role, e.name
		}
	}
	return id
}

// certIdentity is the identity of r's verified client certificate, if any.
func (a *Authenticator) certIdentity(r *http.Request) (Identity, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return Identity{}, false
	}
	cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
	s := a.set.Load()
	if s == nil {
		return Identity{}, false
	}
	role, ok := s.certs[cn]
	return Identity{Name: cn, Role: role, Via: ViaCertificate}, ok
}

// Identify returns who r is: a verified client certificate with a mapped
// name wins, else the bearer token. An unauthenticated request is an error
// (unauthenticated) that never says whether a token exists.
func (a *Authenticator) Identify(r *http.Request) (Identity, error) { return a.identify(r, nil) }

// identify is Identify with a token lookup guarded by lim (nil: none): a
// source out of budget is refused rate_limited before its token is looked
// at; a wrong token spends budget. Certificates are not guessed, so they
// are not guarded; a missing token guesses nothing.
func (a *Authenticator) identify(r *http.Request, lim *Limiter) (Identity, error) {
	if !a.Enabled() {
		return Identity{Name: "anonymous", Role: RoleAdmin, Via: ViaOpen}, nil
	}
	if id, ok := a.certIdentity(r); ok {
		return id, nil
	}
	tok := TokenOf(r)
	if tok == "" {
		return Identity{}, slotstore.Errorf(slotstore.CodeUnauthenticated, "a bearer token or a client certificate is required")
	}
	var id Identity
	var src string
	if lim != nil {
		src = Source(r)
	}
	passed, wait, blocked := lim.Guard(src, func() bool {
		id = a.lookup(tok)
		return id.Role != RoleNone
	})
	switch {
	case blocked:
		return Identity{}, &slotstore.Error{Code: slotstore.CodeRateLimited, RetryAfter: wait,
			Message: fmt.Sprintf("too many failed authentications from %s; retry after %d s", src, RetryAfterSeconds(wait))}
	case !passed:
		return Identity{}, slotstore.Errorf(slotstore.CodeUnauthenticated, "the credentials are not valid")
	}
	return id, nil
}

// Require checks that r carries a credential of at least role and returns
// who it is. It answers nil when checking is off, and nil with no identity
// when role is RoleNone.
func (a *Authenticator) Require(r *http.Request, role Role) (Identity, error) {
	return a.Check(r, role, nil)
}

// Check is Require with failed authentications counted per source by lim
// (nil: not counted): the API and the console both check through it.
func (a *Authenticator) Check(r *http.Request, role Role, lim *Limiter) (Identity, error) {
	if role == RoleNone {
		// Nothing is looked up for what needs no credentials: an
		// unguarded lookup would be a way to test tokens.
		return Identity{}, nil
	}
	id, err := a.identify(r, lim)
	if err != nil {
		return id, err
	}
	// Credentials that passed (a role too low included): the connection
	// may idle as long as the server lets any (package netguard).
	netguard.Prove(r.Context())
	if id.Role < role {
		return id, slotstore.Errorf(slotstore.CodePermissionDenied, "this needs the %s role; the credentials have %s", role, id.Role)
	}
	return id, nil
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// WithRequestIdentity returns r with id in its context.
func WithRequestIdentity(r *http.Request, id Identity) *http.Request {
	return r.WithContext(WithIdentity(r.Context(), id))
}

// IdentityFrom returns the identity ctx carries (zero if none).
func IdentityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}
