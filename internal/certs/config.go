package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ServerConfig is a TLS server config that presents the current certificate
// and verifies client certificates against the current CA pool, with the
// given client authentication: tls.RequireAndVerifyClientCert between
// nodes, tls.VerifyClientCertIfGiven for the API (where bearer tokens are
// the alternative). TLS 1.2 at least.
//
// The certificate and the pool are not fields of the returned config: its
// GetConfigForClient builds the config of each handshake from the state
// current then, so a Reload needs no new config and no new listener. That
// per-handshake config is a clone of the returned config taken at the time
// of the handshake, so what the caller sets on it afterwards — NextProtos
// above all, to which http.Server's HTTP/2 setup appends "h2" — applies too.
func (r *Reloader) ServerConfig(clientAuth tls.ClientAuthType) *tls.Config {
	outer := &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: clientAuth}
	outer.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		s := r.cur.Load()
		c := outer.Clone()
		c.GetConfigForClient = nil
		c.GetCertificate = nil
		c.Certificates = []tls.Certificate{s.cert}
		c.ClientCAs = s.pool
		return c, nil
	}
	return outer
}

// ClientConfig is a TLS client config that presents the current
// certificate (if the server asks for one) and verifies the server's
// certificate against the current CA pool, for server authentication and
// for the server name of the connection — the one the dialer set in
// tls.Config.ServerName, as tls.Dial and http.Transport do from the
// address. With no server name the handshake is refused.
//
// Dialing by IP address needs ClientConfigFor: the name ClientConfig checks
// is the one sent in SNI, read back from the connection state, and SNI
// never carries IP addresses.
//
// InsecureSkipVerify is set, and it does not make the config insecure: it
// only turns off crypto/tls's own check of the server, which would use
// RootCAs as they were when the config was built. VerifyConnection does
// the full check instead — chain, expiry, key usage and host — against
// the pool current at the handshake, on every handshake, resumed ones
// included.
func (r *Reloader) ClientConfig() *tls.Config {
	return r.clientConfig("")
}

// ClientConfigFor is ClientConfig for one server: it sets ServerName to
// host and verifies the server's certificate for host, which may be an IP
// address (which ClientConfig cannot verify, see there).
func (r *Reloader) ClientConfigFor(host string) *tls.Config {
	c := r.clientConfig(host)
	c.ServerName = host
	return c
}

// clientConfig verifies the server for host, or with host "" for the
// server name of the connection state.
func (r *Reloader) clientConfig(host string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification happens in VerifyConnection; see ClientConfig.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c := r.cur.Load().cert // a copy: the state stays untouched
			return &c, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			name := host
			if name == "" {
				name = cs.ServerName
			}
			return r.verifyServer(cs, name)
		},
	}
}

// verifyServer does what crypto/tls does for a client without
// InsecureSkipVerify, with the current pool as the roots.
func (r *Reloader) verifyServer(cs tls.ConnectionState, name string) error {
	if name == "" {
		return errors.New("certs: no server name to verify the server's certificate for: " +
			"set tls.Config.ServerName (a DNS name), or use ClientConfigFor, which also takes IP addresses")
	}
	if len(cs.PeerCertificates) == 0 {
		return errors.New("certs: the server presented no certificate")
	}
	opts := x509.VerifyOptions{
		Roots:         r.cur.Load().pool,
		Intermediates: x509.NewCertPool(),
		DNSName:       name, // an IP address here is matched against the IP SANs
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		// The same error type as crypto/tls's own verification, so callers that
		// recognise a refused certificate by it keep doing so.
		return fmt.Errorf("certs: verifying the server's certificate for %q: %w",
			name, &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err})
	}
	return nil
}

// NodeServerConfig is the TLS server config of the ports only nodes may
// use (Raft and peer RPC): a client certificate is required, verified
// against the current CA pool, and it must be a node certificate — one
// that also allows server authentication. A client certificate of the same
// CA (create-client: client authentication only), which the API accepts,
// is refused here: it names an API caller, not a node.
func (r *Reloader) NodeServerConfig() *tls.Config {
	c := r.ServerConfig(tls.RequireAndVerifyClientCert)
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("certs: no client certificate")
		}
		if !IsNodeCertificate(cs.PeerCertificates[0]) {
			return fmt.Errorf("certs: %q is not a node certificate (it does not allow server authentication)",
				cs.PeerCertificates[0].Subject.CommonName)
		}
		return nil
	}
	return c
}

// IsNodeCertificate reports whether c names server and client
// authentication explicitly, as create-node makes them (a certificate
// without extended key usages is not taken for a node's: with a CA of
// other uses, it could be anything).
func IsNodeCertificate(c *x509.Certificate) bool {
	server, client := false, false
	for _, u := range c.ExtKeyUsage {
		switch u {
		case x509.ExtKeyUsageServerAuth:
			server = true
		case x509.ExtKeyUsageClientAuth:
			client = true
		}
	}
	return server && client
}
