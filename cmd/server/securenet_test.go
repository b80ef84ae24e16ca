package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/certs"
	"github.com/slotmeta/slotmeta/internal/nethost"
)

// rawRaft dials addr, writes what a peer without credentials would (the
// magic bytes of dragonboat's framing and some payload) and reports what
// came back before the node closed the connection.
func rawRaft(t *testing.T, addr string) (reply []byte, closed bool) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_, _ = conn.Write(append([]byte{0xAE, 0x7D}, bytes.Repeat([]byte{1}, 64)...))
	_ = conn.SetReadDeadline(time.Now().Add(7 * time.Second)) // beyond the node's 5 s handshake bound
	reply, err = io.ReadAll(conn)
	var ne net.Error
	return reply, err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// TestSecureByDefaultBeyondLoopback, on three network-namespace hosts with
// certificates from `slotmeta cert`: a raw TCP connection to a node's Raft
// port is closed by the TLS handshake (nothing of it is read as Raft), as
// is a TLS client without a certificate, with one of another CA or with an
// API client's certificate of the same CA, while a node's own certificate
// passes; the API answers over HTTPS with a token
// and with a client certificate mapped to a role, and a plain-HTTP request
// to it is refused; a node without certificates refuses to start on a
// host's address and says how to fix it. Then three hosts with --insecure:
// the raw connection stays open (the Raft port speaks plain TCP), and the
// node says so in GET /v1/cluster/security.
func TestSecureByDefaultBeyondLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("network namespaces")
	}
	if err := nethost.Available(); err != nil {
		t.Skip(err)
	}
	c := nethost.Start(t, nethost.Options{Bin: serverBin, TLS: true, TokensLines: []string{"write cert:app-1"},
		Args: []string{"--rtt", "20ms", "--log-level", "warn"}})
	h := c.Hosts[0]
	raft := h.Addr(nethost.RaftPort)
	reply, closed := rawRaft(t, raft)
	if !closed || (len(reply) > 0 && reply[0] != 0x15) { // 0x15: a TLS alert record, if anything
		t.Fatalf("raw TCP to the Raft port: closed %v, reply %x", closed, reply)
	}
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(c.CAFile())
	pool.AppendCertsFromPEM(pem)
	handshakeTo := func(addr string, cert *tls.Certificate) error {
		cfg := &tls.Config{RootCAs: pool, ServerName: h.IP}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		// TLS 1.3: the server's refusal of the client's certificate comes
		// with the first read.
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		_, err = conn.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil // accepted: the node waits for a message
		}
		return err
	}
	handshake := func(cert *tls.Certificate) error { return handshakeTo(raft, cert) }
	if err := handshake(nil); err == nil {
		t.Fatal("a TLS client without a certificate was accepted on the Raft port")
	}
	other := t.TempDir()
	if err := certs.CreateCA(other, certs.CAOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := certs.CreateNode(other, []string{"10.0.0.1"}, certs.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	foreign, err := tls.LoadX509KeyPair(filepath.Join(other, "node.crt"), filepath.Join(other, "node.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(&foreign); err == nil {
		t.Fatal("a certificate of another CA was accepted on the Raft port")
	}
	own, err := tls.LoadX509KeyPair(filepath.Join(h.CertsDir(), "node.crt"), filepath.Join(h.CertsDir(), "node.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(&own); err != nil {
		t.Fatalf("the node's own certificate was refused: %v", err)
	}
	// An API caller's client certificate of the same CA is no node's.
	caDir := filepath.Dir(c.CAFile())
	if err := certs.CreateClient(caDir, "app-1", certs.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	app, err := tls.LoadX509KeyPair(filepath.Join(caDir, "client.app-1.crt"), filepath.Join(caDir, "client.app-1.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(&app); err == nil {
		t.Fatal("a client certificate (not a node's) was accepted on the Raft port")
	}
	if err := handshakeTo(h.Addr(nethost.PeerPort), &app); err == nil {
		t.Fatal("a client certificate (not a node's) was accepted on the peer RPC port")
	}

	// The API: HTTPS with a token, with a client certificate; plain HTTP refused.
	get := func(cl *http.Client, url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(c.Client(), h.API()+"/v1/cluster/security", c.Token()); code != 200 || !strings.Contains(body, `"cluster_tls":true`) ||
		!strings.Contains(body, `"insecure":false`) {
		t.Fatalf("security over HTTPS with a token: %d %s", code, body)
	}
	withCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{app}}}}
	req, _ := http.NewRequest(http.MethodPut, h.API()+"/v1/kv/secure-key", strings.NewReader(`{"value":"v"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := withCert.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a write with the app-1 client certificate (write role): %d", resp.StatusCode)
	}
	if code, _ := get(withCert, h.API()+"/v1/cluster/security", ""); code != 200 {
		t.Fatalf("a read with the client certificate: %d", code)
	}
	if code, _ := get(withCert, h.API()+"/v1/cluster/audit", ""); code != http.StatusForbidden {
		t.Fatalf("the audit trail with the write role of app-1's certificate: %d, want 403", code)
	}
	plain := strings.Replace(h.API(), "https://", "http://", 1)
	if code, body := get(&http.Client{Timeout: 5 * time.Second}, plain+"/v1/kv/secure-key", c.Token()); code != http.StatusBadRequest {
		t.Fatalf("plain HTTP to the HTTPS API: %d %s", code, body)
	}

	// A node without certificates on a host's address refuses to start.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := h.Exec(ctx, serverBin, "--data-dir", t.TempDir(), "--raft-addr", h.IP+":9999", "--peer-addr", h.IP+":9998",
		"--api-addr", h.IP+":9997", "--cluster-secret", "a-cluster-secret-0123456789", "--tokens-file", "/dev/null")
	if err == nil || !strings.Contains(string(out), "would accept connections from anyone") || !strings.Contains(string(out), "--insecure") {
		t.Fatalf("a node without certificates: %v\n%s", err, out)
	}

	// --insecure: the raw connection is not refused, and the node says so.
	ins := nethost.Start(t, nethost.Options{Bin: serverBin, Args: []string{"--rtt", "20ms", "--log-level", "warn"}})
	ih := ins.Hosts[0]
	conn, err := net.DialTimeout("tcp", ih.Addr(nethost.RaftPort), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	_, err = conn.Read(make([]byte, 1))
	conn.Close()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("--insecure: the plain Raft port should wait for a message, got %v", err)
	}
	code, body := get(ins.Client(), ih.API()+"/v1/cluster/security", ins.Token())
	var st struct {
		Insecure bool     `json:"insecure"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || !st.Insecure || len(st.Warnings) != 2 ||
		!strings.Contains(strings.Join(st.Warnings, " "), "Raft and peer RPC") {
		t.Fatalf("--insecure security: %d %s", code, body)
	}
}
