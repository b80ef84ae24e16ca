package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestReloaderHandshake(t *testing.T) {
	dir := cluster(t)
	node := mustReloader(t, NodeFiles(dir))
	server := node.ServerConfig(tls.RequireAndVerifyClientCert)

	// Node to node: the same certificate on both sides.
	r := handshake(t, server, dialConfig(node.ClientConfig(), "localhost"))
	r.ok(t)
	if got := r.client.PeerCertificates[0].SerialNumber; got.Cmp(node.Leaf().SerialNumber) != 0 {
		t.Errorf("client saw serial %x, want the node's %x", got, node.Leaf().SerialNumber)
	}
	if len(r.server.VerifiedChains) == 0 || r.server.PeerCertificates[0].Subject.CommonName != "node" {
		t.Errorf("server saw client %v, verified chains %d", r.server.PeerCertificates, len(r.server.VerifiedChains))
	}
	if r.client.Version != tls.VersionTLS13 {
		t.Errorf("version %x", r.client.Version)
	}

	// A client certificate, and TLS 1.2 as well.
	root := mustReloader(t, ClientFiles(dir, "root"))
	cfg := dialConfig(root.ClientConfig(), "localhost")
	cfg.MaxVersion = tls.VersionTLS12
	r = handshake(t, server, cfg)
	r.ok(t)
	if cn := r.server.PeerCertificates[0].Subject.CommonName; cn != "root" {
		t.Errorf("server saw client %q", cn)
	}

	// By IP address: SNI carries none, so ClientConfigFor names the server.
	handshake(t, server, node.ClientConfigFor("127.0.0.1")).ok(t)
}

// A CA rotation with overlap: the bundle of both CAs reaches every side
// first, then the node's certificate is re-issued by the new CA.
func TestReloadRotatesCA(t *testing.T) {
	dir := cluster(t)
	node := mustReloader(t, NodeFiles(dir))
	client := mustReloader(t, ClientFiles(dir, "root"))
	stale := mustReloader(t, ClientFiles(dir, "root")) // never reloaded
	server := node.ServerConfig(tls.RequireAndVerifyClientCert)
	clientCfg := client.ClientConfig() // built once, used throughout
	oldSerial := node.Leaf().SerialNumber

	newDir := newCA(t)
	bundle := concat(t, filepath.Join(dir, "ca.crt"), filepath.Join(newDir, "ca.crt"))
	if err := writeFile(filepath.Join(dir, "ca.crt"), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := client.Reload(); err != nil {
		t.Fatal(err)
	}
	opts := CertOptions{CAKey: filepath.Join(newDir, "ca.key"), Overwrite: true} // CA cert: the bundle
	if err := CreateNode(dir, []string{"localhost", "127.0.0.1"}, opts); err != nil {
		t.Fatal(err)
	}

	// Nothing changes before Reload.
	r := handshake(t, server, dialConfig(clientCfg, "localhost"))
	r.ok(t)
	if r.client.PeerCertificates[0].SerialNumber.Cmp(oldSerial) != 0 {
		t.Error("the new certificate was presented before Reload")
	}

	loaded := node.Loaded()
	if err := node.Reload(); err != nil {
		t.Fatal(err)
	}
	if node.Loaded().Before(loaded) {
		t.Error("Loaded went back")
	}
	newSerial := node.Leaf().SerialNumber
	if newSerial.Cmp(oldSerial) == 0 {
		t.Fatal("Reload kept the old certificate")
	}
	r = handshake(t, server, dialConfig(clientCfg, "localhost"))
	r.ok(t)
	if got := r.client.PeerCertificates[0].SerialNumber; got.Cmp(newSerial) != 0 {
		t.Errorf("client saw serial %x, want the new %x", got, newSerial)
	}
	// The client still presents its certificate of the old CA, which the
	// node's bundle still trusts.
	if got := r.server.PeerCertificates[0].Issuer.CommonName; got != "slotmeta CA" || r.server.PeerCertificates[0].Subject.CommonName != "root" {
		t.Errorf("server saw client %v", r.server.PeerCertificates[0].Subject)
	}
	// A client that never got the bundle refuses the new certificate: why
	// the bundle goes out first.
	r = handshake(t, server, dialConfig(stale.ClientConfig(), "localhost"))
	var unknown x509.UnknownAuthorityError
	if !errors.As(r.clientErr, &unknown) {
		t.Errorf("stale client: %v", r.clientErr)
	}
}

func TestReloadKeepsStateOnError(t *testing.T) {
	dir := cluster(t)
	node := mustReloader(t, NodeFiles(dir))
	server := node.ServerConfig(tls.RequireAndVerifyClientCert)
	leaf, loaded := node.Leaf(), node.Loaded()
	keyPath := filepath.Join(dir, "node.key")

	otherKey, _ := os.ReadFile(filepath.Join(dir, "client.root.key"))
	for _, c := range []struct {
		name string
		key  []byte
		want string
	}{
		{"garbage", []byte("not a key\n"), "certs: certificate " + filepath.Join(dir, "node.crt")},
		{"another key", otherKey, "private key does not match public key"},
	} {
		if err := os.WriteFile(keyPath, c.key, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := node.Reload(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Reload: %v, want %q", c.name, err, c.want)
		}
		if node.Leaf() != leaf || !node.Loaded().Equal(loaded) {
			t.Errorf("%s: the failed Reload changed the state", c.name)
		}
		r := handshake(t, server, dialConfig(node.ClientConfig(), "localhost"))
		r.ok(t)
		if r.client.PeerCertificates[0].SerialNumber.Cmp(leaf.SerialNumber) != 0 {
			t.Errorf("%s: another certificate presented", c.name)
		}
	}
	os.Remove(filepath.Join(dir, "ca.crt"))
	if err := node.Reload(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no CA file: %v", err)
	}
	handshake(t, server, dialConfig(node.ClientConfig(), "localhost")).ok(t)
}

func TestNewReloaderErrors(t *testing.T) {
	dir := cluster(t)
	other := cluster(t)
	node := NodeFiles(dir)
	for _, c := range []struct {
		name string
		f    Files
		want string
	}{
		{"empty", Files{CA: node.CA, Cert: node.Cert}, "certs: Files.Key is empty"},
		{"missing CA", Files{CA: filepath.Join(dir, "nope.crt"), Cert: node.Cert, Key: node.Key}, "no such file"},
		{"missing key", Files{CA: node.CA, Cert: node.Cert, Key: filepath.Join(dir, "nope.key")}, "certs: reading the key"},
		{"no certificate in the CA file", Files{CA: node.Key, Cert: node.Cert, Key: node.Key}, "holds no PEM CERTIFICATE block"},
		{"key not matching", Files{CA: node.CA, Cert: node.Cert, Key: filepath.Join(dir, "client.root.key")}, "private key does not match"},
		{"another CA", Files{CA: filepath.Join(other, "ca.crt"), Cert: node.Cert, Key: node.Key}, "does not verify against " + filepath.Join(other, "ca.crt") + " for server authentication"},
		{"client certificate of another CA", Files{CA: filepath.Join(other, "ca.crt"), Cert: filepath.Join(dir, "client.root.crt"), Key: filepath.Join(dir, "client.root.key")}, "for client authentication"},
	} {
		r, err := NewReloader(c.f)
		if r != nil || err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "certs: ") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// Handshakes read the state while Reload replaces it (for the race
// detector).
func TestReloadWhileHandshaking(t *testing.T) {
	dir := cluster(t)
	node := mustReloader(t, NodeFiles(dir))
	server := node.ServerConfig(tls.RequireAndVerifyClientCert)
	client := dialConfig(node.ClientConfig(), "localhost")
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range 3 {
				if err := handshake(t, server, client).err(); err != nil {
					t.Error(err) // not Fatal: this is not the test's goroutine
				}
			}
		})
	}
	for range 5 {
		if err := CreateNode(dir, []string{"localhost"}, CertOptions{Overwrite: true}); err != nil {
			t.Error(err)
		}
		// CreateNode has written the whole pair: this Reload must succeed.
		if err := node.Reload(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
}
