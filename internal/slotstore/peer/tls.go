package peer

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"strings"
)

// TLSConfig names the PEM files of mutual TLS between nodes. Set all three
// or none. When set, dragonboat's Raft transport runs mutual TLS
// (NodeHostConfig.MutualTLS) and peer RPC is served and called over TLS;
// both sides of every connection present a certificate and verify the other
// one against CAFile. The cluster secret is still required on peer RPC.
//
// A client checks the server's certificate against the host of the address
// it dials (RaftAddr, PeerAddr), so every node's certificate must name its
// own hosts or IPs as subject alternative names, and it must allow both
// server and client authentication (or name no extended key usage).
type TLSConfig struct {
	CAFile   string // CA certificate(s) that sign the nodes' certificates
	CertFile string // this node's certificate (chain), signed by a CA of CAFile
	KeyFile  string // this node's private key
}

// Enabled reports whether any TLS file is configured.
func (t TLSConfig) Enabled() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != ""
}

// Validate accepts no files, or three files that exist, parse, and whose
// certificate chains to the CA for both server and client authentication.
func (t TLSConfig) Validate() error {
	if !t.Enabled() {
		return nil
	}
	var missing []string
	for _, f := range []struct{ name, path string }{{"CA file", t.CAFile}, {"certificate file", t.CertFile}, {"key file", t.KeyFile}} {
		if f.path == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("peer: TLS needs a CA file, a certificate file and a key file (or none); missing: %s", strings.Join(missing, ", "))
	}
	_, _, err := t.load()
	return err
}

// load reads the files and returns the CA pool and this node's certificate.
func (t TLSConfig) load() (*x509.CertPool, tls.Certificate, error) {
	caPEM, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("peer: TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := caPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, tls.Certificate{}, fmt.Errorf("peer: TLS CA file %s: %w", t.CAFile, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, tls.Certificate{}, fmt.Errorf("peer: TLS CA file %s holds no PEM certificate", t.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("peer: TLS certificate %s and key %s: %w", t.CertFile, t.KeyFile, err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, tls.Certificate{}, fmt.Errorf("peer: TLS certificate %s: %w", t.CertFile, err)
		}
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			return nil, tls.Certificate{}, fmt.Errorf("peer: TLS certificate %s does not verify against %s for %s: %w",
				t.CertFile, t.CAFile, usageName(usage), err)
		}
	}
	return pool, cert, nil
}

func usageName(u x509.ExtKeyUsage) string {
	if u == x509.ExtKeyUsageServerAuth {
		return "server authentication"
	}
	return "client authentication"
}

// TLS is the TLS of peer RPC: what the node serves with (client
// certificates required and verified against the CA) and calls with.
type TLS struct {
	Server, Client *tls.Config
}

// Load loads the peer RPC TLS configs; nil when TLS is off.
func (t TLSConfig) Load() (*TLS, error) {
	if !t.Enabled() {
		return nil, nil
	}
	pool, cert, err := t.load()
	if err != nil {
		return nil, err
	}
	return &TLS{
		Server: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
		},
		Client: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
			RootCAs:      pool,
		},
	}, nil
}

// Listener wraps ln in TLS; with TLS off (p nil) it returns ln.
func (p *TLS) Listener(ln net.Listener) net.Listener {
	if p == nil {
		return ln
	}
	return tls.NewListener(ln, p.Server)
}

// ErrorLog sends the peer server's own errors (failed TLS handshakes of
// clients without a valid certificate among them) to the node's log at
// debug level instead of stderr.
func ErrorLog(l *slog.Logger) *log.Logger {
	return slog.NewLogLogger(l.Handler(), slog.LevelDebug)
}

// isTLSRefusal reports whether err is a failed TLS handshake: this side
// could not verify the peer's certificate, or the peer refused ours (it
// answered with an alert). Either way no request reached the peer.
func isTLSRefusal(err error) bool {
	var verr *tls.CertificateVerificationError
	var rerr tls.RecordHeaderError
	var uerr x509.UnknownAuthorityError
	var herr x509.HostnameError
	var op *net.OpError
	return errors.As(err, &verr) || errors.As(err, &rerr) || errors.As(err, &uerr) || errors.As(err, &herr) ||
		(errors.As(err, &op) && op.Op == "remote error")
}
