package auth

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// CertPrefix marks a tokens-file line that maps a client certificate's
// common name to a role: "admin cert:ops-alice".
const CertPrefix = "cert:"

// namePattern is what a token or certificate name may look like: it goes
// into logs and the audit trail as is.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// Parse reads a tokens file: one credential per line, blank lines and #
// comments ignored.
//
//	role token [name]      a bearer token, named for the audit trail
//	role cert:<name>       a client certificate whose common name is <name>
//
// An unnamed token is named DefaultName(role, its position).
func Parse(r io.Reader) (Credentials, error) {
	c := Credentials{Certs: map[string]Role{}}
	names := map[string]int{}
	tokens := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) < 2 || len(f) > 3 {
			return Credentials{}, fmt.Errorf("auth: line %d: want a role and a token (and a name), or a role and cert:<name>", line)
		}
		role, err := ParseRole(f[0])
		if err != nil {
			return Credentials{}, fmt.Errorf("auth: line %d: %w", line, err)
		}
		if cn, ok := strings.CutPrefix(f[1], CertPrefix); ok {
			if len(f) != 2 || !namePattern.MatchString(cn) {
				return Credentials{}, fmt.Errorf("auth: line %d: want role cert:<name>, a name of letters, digits and ._@-", line)
			}
			if _, dup := c.Certs[cn]; dup {
				return Credentials{}, fmt.Errorf("auth: line %d: certificate name %q is listed twice", line, cn)
			}
			c.Certs[cn] = role
			continue
		}
		if tokens[f[1]] {
			return Credentials{}, fmt.Errorf("auth: line %d: a token is listed twice", line)
		}
		tokens[f[1]] = true
		t := Token{Secret: f[1], Role: role}
		if len(f) == 3 {
			if !namePattern.MatchString(f[2]) {
				return Credentials{}, fmt.Errorf("auth: line %d: a token name is letters, digits and ._@- (at most 64)", line)
			}
			if prev, dup := names[f[2]]; dup {
				return Credentials{}, fmt.Errorf("auth: line %d: token name %q is already used on line %d", line, f[2], prev)
			}
			names[f[2]] = line
			t.Name = f[2]
		}
		if len(t.Secret) < MinTokenLength {
			return Credentials{}, fmt.Errorf("auth: line %d: a token is shorter than %d characters", line, MinTokenLength)
		}
		c.Tokens = append(c.Tokens, t)
	}
	return c, sc.Err()
}

// ParseEnv reads "role:token,role:token" (tokens named by DefaultName).
func ParseEnv(s string) ([]Token, error) {
	var out []Token
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
		out = append(out, Token{Secret: tok, Role: role})
	}
	return out, nil
}
