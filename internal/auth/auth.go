// Package auth decides who may call the API: named bearer tokens and
// client certificates, each with one role. Roles are ordered — read < write
// < admin — and a credential of a role may do everything the roles below it
// may. Reads of data need read, writes of data need write, and every cluster
// operation that changes something needs admin. Health, readiness, the
// contract and the docs need nothing.
//
// Credentials come from a tokens file (tokens.go: "role token [name]" and
// "role cert:<common name>" lines, # comments) or from SLOTMETA_TOKENS
// ("role:token,…"). Tokens are compared in constant time over their SHA-256
// digests, so neither a token's content nor its length leaks through
// timing; answers say only "not valid", never whether a token exists. A
// client certificate counts only when the TLS layer verified it against the
// API's client CA (r.TLS.VerifiedChains); its common name is then looked up.
// With no credentials configured, checking is off — and the server then
// refuses to listen beyond loopback.
//
// Who asked is an Identity (its credential's name and role), put into the
// request's context by the API's middleware, so that the audit trail can
// name it. Failed authentications are counted per source address by a
// Limiter (limiter.go), which answers 429 with a Retry-After once a source
// fails too often.
//
// Concurrency contract: an Authenticator is safe for concurrent use; Swap
// replaces its credentials atomically (a reload of the tokens file), so a
// request is checked against either the old or the new set, never a mix.
package auth

import (
	"fmt"
	"net/http"
	"strings"
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

// TokenOf extracts the bearer token of r's Authorization header. A cookie
// is never a credential here: the console turns its session cookie into
// the session's token itself (Sessions.WithSession).
func TokenOf(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
	}
	return ""
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
	case p == "/v1/cluster/audit":
		return RoleAdmin // who did what, from where: for administrators (the console checks its page itself)
	case p == "/v1/cluster/backups" || strings.HasPrefix(p, "/v1/cluster/backups/"):
		return RoleAdmin // the whole cluster's data, and where it lies
	case p == "/v1/cluster/recoveries":
		return RoleAdmin // recovery reports name keys
	case r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions:
		return RoleRead
	case strings.HasPrefix(p, "/v1/watch/stream/"):
		return RoleRead // adding a watch to a stream, or cancelling one, reads
	case strings.HasPrefix(p, "/v1/batch/") && strings.HasSuffix(p, "/get"):
		return RoleRead // batch reads take their keys in a body
	case strings.HasPrefix(p, "/v1/cluster"):
		if p == "/v1/cluster/routes/resolve" {
			return RoleRead // a read that takes a body
		}
		return RoleAdmin
	}
	return RoleWrite
}
