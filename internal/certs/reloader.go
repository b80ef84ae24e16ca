package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Files names the PEM files a Reloader loads.
type Files struct {
	CA   string // the CA certificate(s) to trust; several during a CA rotation
	Cert string // this side's certificate, optionally followed by intermediates
	Key  string // the private key of Cert
}

// Reloader holds a certificate, its key and the pool of trusted CAs, loaded
// from Files, and loads them again on Reload. The TLS configs it builds
// (ServerConfig, ClientConfig) read the state current at each handshake.
// See the package documentation for the concurrency contract.
type Reloader struct {
	files Files
	mu    sync.Mutex // serializes Reload, so that an older load never replaces a newer one
	cur   atomic.Pointer[state]
}

// state is one complete load of the files. It is never modified once
// published, which is what lets handshakes read it without a lock.
type state struct {
	cert   tls.Certificate // Leaf is set
	pool   *x509.CertPool  // every certificate of Files.CA
	loaded time.Time
}

// NewReloader loads f. It fails if a file is missing or does not parse, if
// the CA file holds no certificate, if the key is not the certificate's, or
// if the certificate does not verify against the CA file for what it is
// for: a node certificate for server and for client authentication, a
// client certificate for client authentication.
func NewReloader(f Files) (*Reloader, error) {
	s, err := load(f)
	if err != nil {
		return nil, err
	}
	r := &Reloader{files: f}
	r.cur.Store(s)
	return r, nil
}

// Reload loads the files again and makes them current. On any error the
// previous state stays current — a half-written rotation must not take a
// serving node's certificate away — and the error is returned.
func (r *Reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := load(r.files)
	if err != nil {
		return err
	}
	r.cur.Store(s)
	return nil
}

// Loaded is when the current state was loaded.
func (r *Reloader) Loaded() time.Time { return r.cur.Load().loaded }

// Leaf is the current certificate, parsed. It is shared: do not modify it.
func (r *Reloader) Leaf() *x509.Certificate { return r.cur.Load().cert.Leaf }

// load reads and checks f: everything a handshake will need is verified
// here, so that a bad file fails NewReloader or Reload instead of every
// later handshake.
func load(f Files) (*state, error) {
	for _, field := range []struct{ name, path string }{{"CA", f.CA}, {"Cert", f.Cert}, {"Key", f.Key}} {
		if field.path == "" {
			return nil, fmt.Errorf("certs: Files.%s is empty", field.name)
		}
	}
	cas, err := readCertificates(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("certs: reading the certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(f.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: reading the key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: certificate %s with key %s: %w", f.Cert, f.Key, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certs: %s: %w", f.Cert, err)
		}
	}
	inter := x509.NewCertPool()
	for i, der := range cert.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("certs: %s: certificate %d: %w", f.Cert, i+2, err)
		}
		inter.AddCert(c)
	}
	usages := authUsages(cert.Leaf)
	if len(usages) == 0 {
		return nil, fmt.Errorf("certs: %s is for neither server nor client authentication", f.Cert)
	}
	for _, u := range usages {
		opts := x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{u}}
		if _, err := cert.Leaf.Verify(opts); err != nil {
			return nil, fmt.Errorf("certs: %s does not verify against %s for %s authentication: %w", f.Cert, f.CA, usageWord(u), err)
		}
	}
	return &state{cert: cert, pool: pool, loaded: time.Now()}, nil
}
