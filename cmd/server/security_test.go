package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/certs"
)

// newCerts creates a CA and a node certificate for hosts in a fresh
// certificates directory.
func newCerts(t *testing.T, hosts ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := certs.CreateCA(dir, certs.CAOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := certs.CreateNode(dir, hosts, certs.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func tokensFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("admin admin-token-0123456789 ops-alice\nread cert:dashboard\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBeyondLoopbackNeedsCertificates: a node whose Raft, peer or API
// address is not on loopback refuses to start without certificates, and
// says how to fix it; --insecure lets it start, with every exposure named
// as a warning; with certificates it starts clean.
func TestBeyondLoopbackNeedsCertificates(t *testing.T) {
	noEnv := func(string) string { return "" }
	tokens := tokensFile(t)
	base := []string{"--data-dir", t.TempDir(), "--tokens-file", tokens, "--cluster-secret", "a-cluster-secret-0123456789",
		"--raft-addr", "10.9.0.1:9080", "--peer-addr", "10.9.0.1:9180", "--api-addr", "10.9.0.1:8080"}
	o, err := parseOptions(base, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.plan(noEnv)
	if err == nil || !strings.Contains(err.Error(), "Raft and peer RPC on 10.9.0.1:9080, 10.9.0.1:9180 would accept connections from anyone") ||
		!strings.Contains(err.Error(), "slotmeta cert create-ca") || !strings.Contains(err.Error(), "plain HTTP") {
		t.Fatalf("no certificates beyond loopback: %v", err)
	}
	// The real start refuses the same way, before it opens anything.
	if err := run(base, noEnv, io.Discard); err == nil || !strings.Contains(err.Error(), "refusing to start") {
		t.Fatalf("run: %v", err)
	}
	o.Insecure = true
	p, err := o.plan(noEnv)
	if err != nil || len(p.sec.warnings) != 2 || p.sec.tls {
		t.Fatalf("--insecure: %v, warnings %q", err, p.sec.warnings)
	}
	dir := newCerts(t, "10.9.0.1")
	o, err = parseOptions(append(base, "--certs-dir", dir), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if o.TLSCA != filepath.Join(dir, "ca.crt") || o.TLSKey != filepath.Join(dir, "node.key") {
		t.Fatalf("--certs-dir defaults: %+v", o)
	}
	p, err = o.plan(noEnv)
	if err != nil || !p.sec.tls || len(p.sec.warnings) != 0 || p.apiTLS == nil || p.sec.scheme() != "https" {
		t.Fatalf("with certificates: %v %+v", err, p.sec)
	}
	// A certificate for another host is refused before anything starts.
	wrong := newCerts(t, "10.9.0.2")
	o, _ = parseOptions(append(base, "--certs-dir", wrong), noEnv)
	if _, err := o.plan(noEnv); err == nil || !strings.Contains(err.Error(), "names 10.9.0.2, not the host of --raft-addr 10.9.0.1:9080") {
		t.Fatalf("a certificate of another host: %v", err)
	}
}

// TestCheckConfig: a good configuration prints what would run (TLS, named
// tokens, the certificate and its hosts) and exits 0; a bad one lists
// every problem — not only the first.
func TestCheckConfig(t *testing.T) {
	noEnv := func(string) string { return "" }
	dir := newCerts(t, "127.0.0.1", "localhost")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("a-cluster-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	args := []string{"--check-config", "--data-dir", filepath.Join(t.TempDir(), "new"), "--certs-dir", dir, "--tokens-file", tokensFile(t),
		"--cluster-secret-file", secret, "--api-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0", "--peer-addr", "127.0.0.1:0"}
	if err := run(args, noEnv, &out); err != nil {
		t.Fatalf("check-config: %v", err)
	}
	for _, want := range []string{"configuration OK", "mutual TLS", "https://127.0.0.1:0", "client certificates accepted", "named: ops-alice",
		"1 certificate name", "hosts localhost,127.0.0.1", "from " + secret, "(new: the node starts empty)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := []string{"--check-config", "--data-dir", blocker, "--tokens-file", "/nonexistent/tokens", "--tls-ca", filepath.Join(dir, "ca.crt"),
		"--raft-addr", "10.9.0.1:9080", "--peer-addr", "nohostport", "--api-addr", "127.0.0.1:0"}
	err := run(bad, noEnv, io.Discard)
	if err == nil {
		t.Fatal("a bad configuration passed")
	}
	for _, want := range []string{"tokens file", "missing: certificate file, key file", "is not a directory", "--peer-addr nohostport", "cluster-secret"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the problems lack %q:\n%v", want, err)
		}
	}
}

func TestSecretFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	for content, ok := range map[string]bool{"a-cluster-secret-0123456789\n# comment\n": true, "  short \n": false, "": false,
		"a-cluster-secret-0123456789\nshort\n": false} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		s, _, err := readSecretFile(path)
		if (err == nil) != ok || (ok && s != "a-cluster-secret-0123456789") {
			t.Errorf("%q: %q %v", content, s, err)
		}
	}
	if err := os.WriteFile(path, []byte("the-new-secret-0123456789\n\nthe-old-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, accepted, err := readSecretFile(path); err != nil || s != "the-new-secret-0123456789" || len(accepted) != 1 || accepted[0] != "the-old-secret-0123456789" {
		t.Fatalf("a file with an accepted secret: %q %v %v", s, accepted, err)
	}
	o := &options{ClusterSecret: "x", ClusterSecretFile: path}
	if _, err := o.secret(); err == nil {
		t.Fatal("--cluster-secret with --cluster-secret-file was accepted")
	}
}

func TestExpiryWarning(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if w := expiryWarning(now.Add(90*24*time.Hour), now); w != "" {
		t.Fatalf("90 days left: %q", w)
	}
	if w := expiryWarning(now.Add(10*24*time.Hour+time.Hour), now); !strings.Contains(w, "in 10 days") || !strings.Contains(w, "2026-12-11") {
		t.Fatalf("10 days left: %q", w)
	}
	if w := expiryWarning(now.Add(-time.Hour), now); !strings.Contains(w, "expired on 2026-11-30") {
		t.Fatalf("expired: %q", w)
	}
}
