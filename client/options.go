package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"
)

// TLSFiles are the PEM files of a client of an HTTPS cluster (`slotmeta
// cert`): the CA that signed the nodes' certificates and, optionally, a
// client certificate and key (`slotmeta cert create-client NAME`; the
// cluster's tokens file maps its name to a role with "role cert:NAME").
type TLSFiles struct {
	CA       string
	CertFile string // optional, with KeyFile
	KeyFile  string
}

// WithTLS makes the client call the API over HTTPS, verifying the nodes'
// certificates against f.CA and presenting f's client certificate when
// given. It replaces the HTTP client (a 30 s timeout per request).
func WithTLS(f TLSFiles) ClientOption {
	return func(c *Client) error {
		cfg, err := f.TLSConfig()
		if err != nil {
			return err
		}
		c.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true,
			MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}
		return nil
	}
}

// TLSConfig is the client side of f: the CA as the only roots, f's
// certificate presented when given.
func (f TLSFiles) TLSConfig() (*tls.Config, error) {
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("client: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client: CA file %s holds no PEM certificate", f.CA)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	switch {
	case f.CertFile != "" && f.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case f.CertFile != "" || f.KeyFile != "":
		return nil, errors.New("client: a client certificate needs both CertFile and KeyFile")
	}
	return cfg, nil
}

// WithBearerToken sends token as "Authorization: Bearer <token>" on every
// request.
func WithBearerToken(token string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}
