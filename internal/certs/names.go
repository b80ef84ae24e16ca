package certs

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// parseHosts splits hosts into IP addresses and DNS names, rejecting what
// would give a certificate no client can match: empty hosts, host:port
// addresses (a certificate names hosts; the port is not part of it) and
// strings that are neither an IP address nor a DNS name. Duplicates are
// dropped.
func parseHosts(hosts []string) ([]net.IP, []string, error) {
	if len(hosts) == 0 {
		return nil, nil, errors.New("certs: a node certificate needs at least one host (a DNS name or an IP address)")
	}
	var ips []net.IP
	var names []string
	seen := make(map[string]bool)
	for _, raw := range hosts {
		h := strings.TrimSpace(raw)
		if h == "" {
			return nil, nil, fmt.Errorf("certs: empty host %q", raw)
		}
		if _, _, err := net.SplitHostPort(h); err == nil {
			return nil, nil, fmt.Errorf("certs: host %q has a port: certificates name hosts (DNS names or IP addresses), not host:port addresses", h)
		}
		if ip := net.ParseIP(h); ip != nil {
			if v4 := ip.To4(); v4 != nil {
				ip = v4
			}
			if !seen[ip.String()] {
				seen[ip.String()] = true
				ips = append(ips, ip)
			}
			continue
		}
		if !validDNSName(h) {
			return nil, nil, fmt.Errorf("certs: host %q is neither an IP address nor a DNS name", h)
		}
		if key := strings.ToLower(h); !seen[key] {
			seen[key] = true
			names = append(names, h)
		}
	}
	return ips, names, nil
}

// validDNSName accepts dot-separated labels of letters, digits, '-' (not at
// either end) and '_' (which Go's verifier tolerates, and container
// service names use), with an optional leading "*." wildcard. A name whose
// last label is all digits is taken for a mistyped IP address.
func validDNSName(s string) bool {
	s = strings.TrimPrefix(s, "*.")
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range []byte(l) {
			if !isAlnum(c) && c != '-' && c != '_' {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

// validClientName is ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$, without a global
// regular expression.
func validClientName(s string) bool {
	if s == "" || len(s) > 64 || !isAlnum(s[0]) {
		return false
	}
	for _, c := range []byte(s) {
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
