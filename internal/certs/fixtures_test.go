package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
)

// cluster creates, in a new directory, a CA, a node certificate for
// localhost and 127.0.0.1, and the certificate of client "root".
func cluster(t *testing.T) string {
	t.Helper()
	dir := newCA(t)
	if err := CreateNode(dir, []string{"localhost", "127.0.0.1"}, CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := CreateClient(dir, "root", CertOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustReloader(t *testing.T, f Files) *Reloader {
	t.Helper()
	r, err := NewReloader(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dialConfig is what a dialer does with a client config: a clone with the
// server name set.
func dialConfig(c *tls.Config, serverName string) *tls.Config {
	c = c.Clone()
	c.ServerName = serverName
	return c
}

type result struct {
	client, server       tls.ConnectionState // each side's view
	clientErr, serverErr error
}

// handshake runs one TLS connection between server and client over
// loopback TCP (whose buffers, unlike net.Pipe, never leave both sides
// blocked in a write when one of them gives up mid-flight), and exchanges
// one byte from the server: in TLS 1.3 the client's handshake completes
// before the server has checked the client's certificate, and a refusal
// reaches the client with its first read.
func handshake(t *testing.T, server, client *tls.Config) result {
	t.Helper()
	var r result
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.clientErr = err
		return r
	}
	defer ln.Close()
	accepted := make(chan *tls.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			r.serverErr = err
			close(accepted)
			return
		}
		srv := tls.Server(c, server)
		if r.serverErr = srv.Handshake(); r.serverErr == nil {
			r.server = srv.ConnectionState()
			_, r.serverErr = srv.Write([]byte{1})
		}
		// Not closed here: a refusal's alert must reach the client before
		// the connection goes away.
		accepted <- srv
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		r.clientErr = err
		ln.Close()
	} else {
		cli := tls.Client(c, client)
		if r.clientErr = cli.Handshake(); r.clientErr == nil {
			var b [1]byte
			if _, r.clientErr = io.ReadFull(cli, b[:]); r.clientErr == nil {
				r.client = cli.ConnectionState()
			}
		}
		cli.Close()
	}
	if srv := <-accepted; srv != nil {
		srv.Close()
	}
	return r
}

func (r result) ok(t *testing.T) {
	t.Helper()
	if err := r.err(); err != nil {
		t.Fatal(err)
	}
}

func (r result) err() error {
	if r.clientErr != nil || r.serverErr != nil {
		return fmt.Errorf("handshake: client: %v; server: %v", r.clientErr, r.serverErr)
	}
	return nil
}

func (r result) refused(t *testing.T) {
	t.Helper()
	if r.clientErr == nil || r.serverErr == nil {
		t.Fatalf("handshake not refused: client: %v; server: %v", r.clientErr, r.serverErr)
	}
}

// newCA creates a CA in a new temporary directory and returns the directory.
func newCA(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := CreateCA(dir, CAOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readCert parses the one certificate of path.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := readCertificates(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(certs) != 1 {
		t.Fatalf("%s holds %d certificates, want 1", path, len(certs))
	}
	return certs[0]
}

func poolOf(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

func concat(t *testing.T, paths ...string) []byte {
	t.Helper()
	var out []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}
