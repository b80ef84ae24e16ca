package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestServerRefusesClients(t *testing.T) {
	dir := cluster(t)
	node := mustReloader(t, NodeFiles(dir))
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	noCert := &tls.Config{RootCAs: poolOf(ca), ServerName: "localhost"}

	r := handshake(t, node.ServerConfig(tls.RequireAndVerifyClientCert), noCert)
	r.refused(t)
	if !strings.Contains(r.clientErr.Error(), "certificate required") {
		t.Errorf("client without certificate: %v", r.clientErr)
	}

	// A certificate of another CA.
	stranger := mustReloader(t, NodeFiles(cluster(t)))
	r = handshake(t, node.ServerConfig(tls.RequireAndVerifyClientCert), &tls.Config{
		RootCAs: poolOf(ca), ServerName: "localhost",
		GetClientCertificate: stranger.ClientConfig().GetClientCertificate,
	})
	r.refused(t)
	var unknown x509.UnknownAuthorityError
	if !errors.As(r.serverErr, &unknown) {
		t.Errorf("server: %v, want an unknown authority", r.serverErr)
	}

	// The API takes clients without certificates, and checks those with one.
	api := node.ServerConfig(tls.VerifyClientCertIfGiven)
	r = handshake(t, api, noCert)
	r.ok(t)
	if len(r.server.PeerCertificates) != 0 {
		t.Error("server saw a client certificate")
	}
	handshake(t, api, &tls.Config{
		RootCAs: poolOf(ca), ServerName: "localhost",
		GetClientCertificate: stranger.ClientConfig().GetClientCertificate,
	}).refused(t)
}

func TestClientRefusesServers(t *testing.T) {
	dir := cluster(t)
	node := mustReloader(t, NodeFiles(dir))
	server := node.ServerConfig(tls.RequireAndVerifyClientCert)
	stranger := mustReloader(t, NodeFiles(cluster(t)))

	for _, c := range []struct {
		name   string
		server *tls.Config
		client *tls.Config
		check  func(error) bool
	}{
		{"another CA", stranger.ServerConfig(tls.RequireAndVerifyClientCert), dialConfig(node.ClientConfig(), "localhost"),
			func(err error) bool { var e x509.UnknownAuthorityError; return errors.As(err, &e) }},
		{"another host", server, dialConfig(node.ClientConfig(), "node7.example"),
			func(err error) bool { var e x509.HostnameError; return errors.As(err, &e) }},
		{"another IP", server, node.ClientConfigFor("10.9.9.9"),
			func(err error) bool { var e x509.HostnameError; return errors.As(err, &e) }},
		{"no server name", server, node.ClientConfig(),
			func(err error) bool { return strings.Contains(err.Error(), "no server name") }},
		{"an IP through ClientConfig", server, dialConfig(node.ClientConfig(), "127.0.0.1"),
			func(err error) bool { return strings.Contains(err.Error(), "ClientConfigFor") }},
		{"a client-only certificate serving", mustReloader(t, clientOnlyFor(t, dir, "localhost")).ServerConfig(tls.RequireAndVerifyClientCert),
			dialConfig(node.ClientConfig(), "localhost"),
			func(err error) bool {
				var e x509.CertificateInvalidError
				return errors.As(err, &e) && e.Reason == x509.IncompatibleUsage
			}},
	} {
		r := handshake(t, c.server, c.client)
		if r.clientErr == nil || !c.check(r.clientErr) {
			t.Errorf("%s: client: %v", c.name, r.clientErr)
		}
		var verr *tls.CertificateVerificationError
		if c.name != "no server name" && c.name != "an IP through ClientConfig" && !errors.As(r.clientErr, &verr) {
			t.Errorf("%s: %v is no tls.CertificateVerificationError", c.name, r.clientErr)
		}
	}
}

// clientOnlyFor signs, with the CA of dir, a certificate for host that is
// for client authentication only, and returns its files.
func clientOnlyFor(t *testing.T, dir, host string) Files {
	t.Helper()
	ca, caKey, err := loadCA(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7),
		Subject:      pkix.Name{CommonName: "client-only"},
		NotBefore:    ca.NotBefore,
		NotAfter:     ca.NotAfter,
		DNSNames:     []string{host},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	f := Files{CA: filepath.Join(dir, CACertFile), Cert: filepath.Join(dir, "client-only.pem"), Key: filepath.Join(dir, "client-only.key")}
	if err := writePair(f.Cert, der, f.Key, key); err != nil {
		t.Fatal(err)
	}
	return f
}

// Settings made on the server config after ServerConfig apply to every
// handshake: http.Server's HTTP/2 setup appends "h2" to NextProtos.
func TestServerConfigHonoursNextProtos(t *testing.T) {
	dir := cluster(t)
	node := mustReloader(t, NodeFiles(dir))
	server := node.ServerConfig(tls.RequireAndVerifyClientCert)
	server.NextProtos = []string{"slotmeta-raft"}
	client := dialConfig(node.ClientConfig(), "localhost")
	client.NextProtos = []string{"slotmeta-raft"}
	r := handshake(t, server, client)
	r.ok(t)
	if r.client.NegotiatedProtocol != "slotmeta-raft" {
		t.Errorf("negotiated %q", r.client.NegotiatedProtocol)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		TLSConfig: node.ServerConfig(tls.VerifyClientCertIfGiven),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			io.WriteString(w, req.Proto)
		}),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	defer func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ServeTLS: %v", err)
		}
	}()
	tr := &http.Transport{TLSClientConfig: node.ClientConfigFor("127.0.0.1"), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "HTTP/2.0" {
		t.Errorf("served over %q, want HTTP/2.0", body)
	}
}

// TestNodeServerConfigRefusesClientCertificates: the node-only ports take a
// node certificate of the CA and refuse a client certificate of the same CA
// (an API caller is no node).
func TestNodeServerConfigRefusesClientCertificates(t *testing.T) {
	dir := cluster(t)
	node := mustReloader(t, NodeFiles(dir))
	if err := CreateClient(dir, "ops", CertOptions{}); err != nil {
		t.Fatal(err)
	}
	client := mustReloader(t, ClientFiles(dir, "ops"))
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	r := handshake(t, node.NodeServerConfig(), &tls.Config{RootCAs: poolOf(ca), ServerName: "localhost",
		GetClientCertificate: client.ClientConfig().GetClientCertificate})
	r.refused(t)
	if r.serverErr == nil || !strings.Contains(r.serverErr.Error(), "not a node certificate") {
		t.Errorf("server: %v", r.serverErr)
	}
	handshake(t, node.NodeServerConfig(), &tls.Config{RootCAs: poolOf(ca), ServerName: "localhost",
		GetClientCertificate: node.ClientConfig().GetClientCertificate}).ok(t)
}
