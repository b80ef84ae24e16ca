package client

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/slotmeta/slotmeta/internal/certs"
)

// TestWithTLS: the client verifies the server against the cluster's CA,
// presents its client certificate, and sends its token; without the CA
// the server's certificate is refused.
func TestWithTLS(t *testing.T) {
	dir := t.TempDir()
	if err := certs.CreateCA(dir, certs.CAOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := certs.CreateNode(dir, []string{"127.0.0.1"}, certs.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := certs.CreateClient(dir, "ops", certs.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := certs.NewReloader(certs.NodeFiles(dir))
	if err != nil {
		t.Fatal(err)
	}
	var seen struct{ cn, auth string }
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.TLS != nil && len(req.TLS.VerifiedChains) > 0 {
			seen.cn = req.TLS.VerifiedChains[0][0].Subject.CommonName
		}
		seen.auth = req.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	srv.TLS = r.ServerConfig(tls.VerifyClientCertIfGiven)
	srv.StartTLS()
	defer srv.Close()

	cf := certs.ClientFiles(dir, "ops")
	c, err := NewClientWithResponses(srv.URL, WithTLS(TLSFiles{CA: filepath.Join(dir, "ca.crt"), CertFile: cf.Cert, KeyFile: cf.Key}),
		WithBearerToken("a-token-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.HealthzWithResponse(context.Background())
	if err != nil || resp.StatusCode() != 200 || seen.cn != "ops" || seen.auth != "Bearer a-token-0123456789" {
		t.Fatalf("over TLS: %v %v, seen %+v", err, resp, seen)
	}
	plain, err := NewClientWithResponses(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.HealthzWithResponse(context.Background()); err == nil {
		t.Fatal("a server certificate of the cluster's CA was trusted without the CA file")
	}
	if _, err := NewClientWithResponses(srv.URL, WithTLS(TLSFiles{CA: filepath.Join(dir, "ca.crt"), CertFile: cf.Cert})); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
}
