package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
)

// security is how the node's listeners are protected, decided from the
// flags: mutual TLS for Raft and peer RPC and HTTPS for the API whenever
// certificates are given; beyond loopback, nothing unauthenticated or in
// clear text unless --insecure says so — and then every exposure is a
// warning, logged at start, shown by GET /v1/cluster/security and on every
// console page.
type security struct {
	tls      bool     // certificates given: Raft and peer RPC mutual TLS, API over HTTPS
	warnings []string // what --insecure lets through
}

func (o *options) tlsConfig() peer.TLSConfig {
	return peer.TLSConfig{CAFile: o.TLSCA, CertFile: o.TLSCert, KeyFile: o.TLSKey}
}

// checkSecurity applies the rule; each problem names a listener that would
// be exposed and how to fix it.
func (o *options) checkSecurity(authn *auth.Authenticator) (security, []error) {
	s := security{tls: o.tlsConfig().Enabled()}
	var problems []error
	if !authn.Enabled() && !isLoopback(o.APIAddr) {
		// Never serve the API beyond this machine without access control,
		// --insecure or not.
		problems = append(problems, fmt.Errorf("no API tokens are configured (--tokens-file or SLOTMETA_TOKENS), so the API only listens on loopback; %s is not", o.APIAddr))
	}
	var cluster []string
	for _, a := range []string{o.RaftAddr, o.PeerAddr} {
		if !isLoopback(a) {
			cluster = append(cluster, a)
		}
	}
	if len(cluster) > 0 && !s.tls {
		msg := fmt.Sprintf("Raft and peer RPC on %s would accept connections from anyone who reaches them (no certificates)", strings.Join(cluster, ", "))
		if o.Insecure {
			s.warnings = append(s.warnings, msg)
		} else {
			problems = append(problems, errors.New(msg+": create them with `slotmeta cert create-ca` and `slotmeta cert create-node --host …` and pass --certs-dir (or --tls-ca, --tls-cert, --tls-key), or run with --insecure (never in production)"))
		}
	}
	if !isLoopback(o.APIAddr) && !s.tls {
		msg := fmt.Sprintf("the API on %s is plain HTTP: bearer tokens and the console's cookie cross the network in clear text", o.APIAddr)
		if o.Insecure {
			s.warnings = append(s.warnings, msg)
		} else {
			problems = append(problems, errors.New(msg+"; give the node certificates (--certs-dir) to serve HTTPS, or run with --insecure"))
		}
	}
	return s, problems
}

// problems are every reason a configuration cannot run, each on its own
// line.
type problems []error

func (ps problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return "refusing to start:\n  - " + strings.Join(lines, "\n  - ")
}

// scheme is the API's URL scheme.
func (s security) scheme() string {
	if s.tls {
		return "https"
	}
	return "http"
}
