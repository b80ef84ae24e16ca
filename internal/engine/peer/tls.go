package peer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/certs"
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
	_, err := t.Load()
	return err
}

// complete reports a TLS config with some of its three files missing.
func (t TLSConfig) complete() error {
	var missing []string
	for _, f := range []struct{ name, path string }{{"CA file", t.CAFile}, {"certificate file", t.CertFile}, {"key file", t.KeyFile}} {
		if f.path == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("peer: TLS needs a CA file, a certificate file and a key file (or none); missing: %s", strings.Join(missing, ", "))
	}
	return nil
}

func (t TLSConfig) files() certs.Files {
	return certs.Files{CA: t.CAFile, Cert: t.CertFile, Key: t.KeyFile}
}

// TLS is the TLS of peer RPC: the node's certificate and CA pool, reloaded
// in place (Reload), what the node serves with (client certificates
// required and verified against the CA) and how it dials.
type TLS struct {
	Files  *certs.Reloader
	Server *tls.Config
}

// Load loads the peer RPC TLS; nil when TLS is off.
func (t TLSConfig) Load() (*TLS, error) {
	if !t.Enabled() {
		return nil, nil
	}
	if err := t.complete(); err != nil {
		return nil, err
	}
	r, err := certs.NewReloader(t.files())
	if err != nil {
		return nil, err
	}
	return &TLS{Files: r, Server: r.NodeServerConfig()}, nil
}

// Reload re-reads the files: new handshakes use them (a failed reload
// keeps the previous ones and says why).
func (p *TLS) Reload() error {
	if p == nil {
		return nil
	}
	return p.Files.Reload()
}

// Listener wraps ln in TLS; with TLS off (p nil) it returns ln.
func (p *TLS) Listener(ln net.Listener) net.Listener {
	if p == nil {
		return ln
	}
	return tls.NewListener(ln, p.Server)
}

// dialTLS dials addr and runs the TLS handshake with the certificate and
// CA pool current now, verifying the peer for the host of addr (an IP
// address or a name). A failed handshake is a handshakeError: nothing
// reached the peer.
func (p *TLS) dialTLS(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn := tls.Client(raw, p.Files.ClientConfigFor(host))
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, &handshakeError{err: err}
		}
		return conn, nil
	}
}

// HTTPClient is an HTTPS client that dials like peer RPC (this node's
// certificate, the cluster's CA): for calls to another node's API.
func (p *TLS) HTTPClient() *http.Client {
	d := &net.Dialer{Timeout: 2 * time.Second}
	return &http.Client{Transport: &http.Transport{DialTLSContext: p.dialTLS(d.DialContext)}}
}

// handshakeError is a failed TLS handshake with a peer.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return "TLS handshake: " + e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

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
	var hs *handshakeError
	return errors.As(err, &hs) || errors.As(err, &verr) || errors.As(err, &rerr) || errors.As(err, &uerr) || errors.As(err, &herr) ||
		(errors.As(err, &op) && op.Op == "remote error")
}
