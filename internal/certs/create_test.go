package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// checkKey checks that path is a PKCS#8 P-256 key of cert, readable by its
// owner only.
func checkKey(t *testing.T, path string, cert *x509.Certificate) {
	t.Helper()
	if m := mode(t, path); m != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, m)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PRIVATE KEY" {
		t.Fatalf("%s is not a PEM PRIVATE KEY", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		t.Fatalf("%s holds a %T, want an ECDSA P-256 key", path, key)
	}
	if !ec.PublicKey.Equal(cert.PublicKey) {
		t.Errorf("%s is not the key of the certificate", path)
	}
}

func TestCreateCANodeClient(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "certs") // created by CreateCA
	now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	if err := CreateCA(dir, CAOptions{Now: clock}); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("certificates directory has mode %v, want 0700", m)
	}
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	checkKey(t, filepath.Join(dir, "ca.key"), ca)
	if !ca.IsCA || !ca.BasicConstraintsValid || ca.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign {
		t.Errorf("CA: IsCA %v, BasicConstraintsValid %v, KeyUsage %v", ca.IsCA, ca.BasicConstraintsValid, ca.KeyUsage)
	}
	if ca.Subject.CommonName != "slotmeta CA" {
		t.Errorf("CA common name %q", ca.Subject.CommonName)
	}
	if !ca.NotBefore.Equal(now.Add(-time.Hour)) || !ca.NotAfter.Equal(now.Add(10*365*24*time.Hour)) {
		t.Errorf("CA valid %v to %v", ca.NotBefore, ca.NotAfter)
	}
	if ca.SerialNumber.Sign() <= 0 || ca.SerialNumber.BitLen() > 128 {
		t.Errorf("CA serial %v", ca.SerialNumber)
	}

	hosts := []string{"node1.example", "10.0.0.1", "::1", "localhost", "10.0.0.1"}
	if err := CreateNode(dir, hosts, CertOptions{Now: clock}); err != nil {
		t.Fatal(err)
	}
	node := readCert(t, filepath.Join(dir, "node.crt"))
	checkKey(t, filepath.Join(dir, "node.key"), node)
	if m := mode(t, filepath.Join(dir, "node.crt")); m != 0o644 {
		t.Errorf("node.crt has mode %v, want 0644", m)
	}
	if node.Subject.CommonName != "node" {
		t.Errorf("node common name %q", node.Subject.CommonName)
	}
	if !slices.Equal(node.DNSNames, []string{"node1.example", "localhost"}) {
		t.Errorf("DNS names %v", node.DNSNames)
	}
	var ips []string
	for _, ip := range node.IPAddresses {
		ips = append(ips, ip.String())
	}
	if !slices.Equal(ips, []string{"10.0.0.1", "::1"}) {
		t.Errorf("IP addresses %v (duplicates are dropped)", ips)
	}
	if node.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
		t.Errorf("node key usage %v", node.KeyUsage)
	}
	if !node.NotAfter.Equal(now.Add(5 * 365 * 24 * time.Hour)) {
		t.Errorf("node valid until %v", node.NotAfter)
	}
	at := now.Add(time.Hour)
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		for _, host := range []string{"node1.example", "10.0.0.1", "::1", "localhost"} {
			if _, err := node.Verify(x509.VerifyOptions{Roots: poolOf(ca), DNSName: host, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
				t.Errorf("node certificate for %s, usage %v: %v", host, u, err)
			}
		}
	}
	if _, err := node.Verify(x509.VerifyOptions{Roots: poolOf(ca), DNSName: "10.0.0.2", CurrentTime: at}); err == nil {
		t.Error("node certificate verifies for a host it does not name")
	}

	if err := CreateClient(dir, "root", CertOptions{Now: clock}); err != nil {
		t.Fatal(err)
	}
	client := readCert(t, filepath.Join(dir, "client.root.crt"))
	checkKey(t, filepath.Join(dir, "client.root.key"), client)
	if client.Subject.CommonName != "root" || !slices.Equal(client.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("client: common name %q, ext key usage %v", client.Subject.CommonName, client.ExtKeyUsage)
	}
	if !client.NotAfter.Equal(now.Add(2 * 365 * 24 * time.Hour)) {
		t.Errorf("client valid until %v", client.NotAfter)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: poolOf(ca), CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate for client auth: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: poolOf(ca), CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client certificate verifies for server auth")
	}
	if node.SerialNumber.Cmp(client.SerialNumber) == 0 || node.SerialNumber.Cmp(ca.SerialNumber) == 0 {
		t.Error("serial numbers repeat")
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestCreateRefusesOverwrite(t *testing.T) {
	dir := newCA(t)
	before, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err := CreateCA(dir, CAOptions{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second CreateCA: %v, want fs.ErrExist", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); string(after) != string(before) {
		t.Error("ca.crt changed")
	}
	if err := CreateNode(dir, []string{"localhost"}, CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := CreateNode(dir, []string{"localhost"}, CertOptions{}); !errors.Is(err, fs.ErrExist) || !strings.HasPrefix(err.Error(), "certs: ") {
		t.Errorf("second CreateNode: %v", err)
	}
	if err := CreateClient(dir, "root", CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := CreateClient(dir, "root", CertOptions{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second CreateClient: %v", err)
	}
	// A lone key still blocks: the pair would not match.
	os.Remove(filepath.Join(dir, "node.crt"))
	if err := CreateNode(dir, []string{"localhost"}, CertOptions{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateNode over node.key: %v", err)
	}
	for _, step := range []func() error{
		func() error { return CreateCA(dir, CAOptions{Overwrite: true}) },
		func() error { return CreateNode(dir, []string{"localhost"}, CertOptions{Overwrite: true}) },
		func() error { return CreateClient(dir, "root", CertOptions{Overwrite: true}) },
	} {
		if err := step(); err != nil {
			t.Errorf("with Overwrite: %v", err)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); string(after) == string(before) {
		t.Error("ca.crt not replaced with Overwrite")
	}
}

func TestCreateNodeBadHosts(t *testing.T) {
	dir := newCA(t)
	for _, c := range []struct {
		hosts []string
		want  string
	}{
		{nil, "at least one host"},
		{[]string{"10.0.0.1:9080"}, `host "10.0.0.1:9080" has a port`},
		{[]string{"node1:9080"}, "not host:port addresses"},
		{[]string{"[::1]:9080"}, "has a port"},
		{[]string{"ok.example", ""}, "empty host"},
		{[]string{"   "}, "empty host"},
		{[]string{"[::1]"}, "neither an IP address nor a DNS name"},
		{[]string{"10.0.0"}, "neither an IP address nor a DNS name"},
		{[]string{"no spaces"}, "neither an IP address nor a DNS name"},
		{[]string{"-dash.example"}, "neither an IP address nor a DNS name"},
	} {
		err := CreateNode(dir, c.hosts, CertOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "certs: ") {
			t.Errorf("hosts %q: %v, want an error with %q", c.hosts, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a refused CreateNode wrote node.key")
	}
	// Wildcards and underscores are names.
	if err := CreateNode(dir, []string{" *.nodes.example ", "slot_meta-1"}, CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readCert(t, filepath.Join(dir, "node.crt")).DNSNames; !slices.Equal(got, []string{"*.nodes.example", "slot_meta-1"}) {
		t.Errorf("DNS names %v", got)
	}
}

func TestCreateClientBadName(t *testing.T) {
	dir := newCA(t)
	for _, name := range []string{"", ".hidden", "-x", "a/b", "../root", "a b", "ü", strings.Repeat("a", 65)} {
		if err := CreateClient(dir, name, CertOptions{}); err == nil || !strings.Contains(err.Error(), "client name") {
			t.Errorf("name %q: %v", name, err)
		}
	}
	for _, name := range []string{"a", "root", "svc.api_v2-b", strings.Repeat("a", 64)} {
		if err := CreateClient(dir, name, CertOptions{}); err != nil {
			t.Errorf("name %q: %v", name, err)
		}
	}
}

// The CA key may live outside the certificates directory, and the CA file
// may be a bundle: the key finds its certificate in it.
func TestCreateNodeFromCAElsewhereAndBundle(t *testing.T) {
	oldCA, newCAdir := newCA(t), newCA(t)
	dir := t.TempDir()
	bundle := concat(t, filepath.Join(oldCA, "ca.crt"), filepath.Join(newCAdir, "ca.crt"))
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CreateNode(dir, []string{"localhost"}, CertOptions{CAKey: filepath.Join(newCAdir, "ca.key")}); err != nil {
		t.Fatal(err)
	}
	node := readCert(t, filepath.Join(dir, "node.crt"))
	newCert := readCert(t, filepath.Join(newCAdir, "ca.crt"))
	if _, err := node.Verify(x509.VerifyOptions{Roots: poolOf(newCert), DNSName: "localhost"}); err != nil {
		t.Errorf("not signed by the CA of the key: %v", err)
	}
	// A key whose certificate is not in the CA file is refused.
	err := CreateNode(t.TempDir(), []string{"localhost"}, CertOptions{CACert: filepath.Join(oldCA, "ca.crt"), CAKey: filepath.Join(newCAdir, "ca.key")})
	if err == nil || !strings.Contains(err.Error(), "holds no certificate of the key") {
		t.Errorf("mismatched CA key: %v", err)
	}
	// A missing CA is reported as such, and creates nothing.
	empty := filepath.Join(t.TempDir(), "none")
	if err := CreateNode(empty, []string{"localhost"}, CertOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no CA: %v", err)
	}
	if _, err := os.Stat(empty); !errors.Is(err, fs.ErrNotExist) {
		t.Error("CreateNode without a CA created the directory")
	}
	// A node certificate is no CA.
	err = CreateClient(dir, "x", CertOptions{CACert: filepath.Join(dir, "node.crt"), CAKey: filepath.Join(dir, "node.key")})
	if err == nil || !strings.Contains(err.Error(), "not a CA certificate") {
		t.Errorf("node as CA: %v", err)
	}
}

func TestCreateLifetimes(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	if err := CreateCA(dir, CAOptions{Now: clock, Lifetime: 30 * 24 * time.Hour, CommonName: "test CA"}); err != nil {
		t.Fatal(err)
	}
	if cn := readCert(t, filepath.Join(dir, "ca.crt")).Subject.CommonName; cn != "test CA" {
		t.Errorf("CA common name %q", cn)
	}
	// A certificate does not outlive its CA.
	if err := CreateNode(dir, []string{"localhost"}, CertOptions{Now: clock}); err != nil {
		t.Fatal(err)
	}
	if got := readCert(t, filepath.Join(dir, "node.crt")).NotAfter; !got.Equal(now.Add(30 * 24 * time.Hour)) {
		t.Errorf("node valid until %v, want the CA's expiry", got)
	}
	if err := CreateClient(dir, "a", CertOptions{Now: clock, Lifetime: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got := readCert(t, filepath.Join(dir, "client.a.crt")).NotAfter; !got.Equal(now.Add(24 * time.Hour)) {
		t.Errorf("client valid until %v", got)
	}
	// Nor is one signed by an expired CA.
	later := func() time.Time { return now.Add(31 * 24 * time.Hour) }
	if err := CreateClient(dir, "b", CertOptions{Now: later}); err == nil || !strings.Contains(err.Error(), "not now") {
		t.Errorf("expired CA: %v", err)
	}
	if err := CreateCA(t.TempDir(), CAOptions{Lifetime: -time.Hour}); err == nil {
		t.Error("negative lifetime accepted")
	}
}
