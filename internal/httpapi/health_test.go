package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func TestHealthAndReadiness(t *testing.T) {
	f := newFake(t, 2)
	h := newHandler(t, f)
	if w := do(t, h, "GET", "/healthz", ""); w.Code != 200 || w.Body.String() != "{\"status\":\"ok\"}\n" {
		t.Fatalf("healthz %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/readyz", ""); w.Code != 200 || w.Body.String() != "{\"status\":\"ok\"}\n" {
		t.Fatalf("readyz %d %s", w.Code, w.Body)
	}
	for _, err := range []error{
		slotstore.Errorf(slotstore.CodeRouteNotReady, "group 2 has no live leader"),
		errors.New("still replaying the log"),
		slotstore.Errorf(slotstore.CodeInternal, "odd"),
	} {
		f.readyErr = err
		w := do(t, h, "GET", "/readyz", "")
		if w.Code != 503 || w.Header().Get("Retry-After") == "" {
			t.Fatalf("readyz with %v: %d %s", err, w.Code, w.Body)
		}
		if e := decodeError(t, w); !strings.Contains(e.Message, err.Error()) && !strings.Contains(err.Error(), e.Message) {
			t.Fatalf("readyz with %v: %+v", err, e)
		}
	}
}

func TestMetrics(t *testing.T) {
	f := newFake(t, 2)
	reg := prometheus.NewRegistry()
	h := newHandler(t, f, func(c *Config) { c.Registerer, c.Gatherer = reg, nil })
	do(t, h, "PUT", "/v1/kv/some-key", `{"value":"v"}`)
	do(t, h, "GET", "/v1/kv/other-key", "")
	do(t, h, "GET", "/no/such/path", "")
	w := do(t, h, "GET", "/metrics", "")
	if w.Code != 200 {
		t.Fatalf("metrics %d", w.Code)
	}
	body := w.Body.String()
	for _, want := range []string{
		`slotmeta_http_request_duration_seconds_count{code="200",method="PUT",route="/v1/kv/{key}"} 1`,
		`slotmeta_http_request_duration_seconds_count{code="404",method="GET",route="/v1/kv/{key}"} 1`,
		`slotmeta_http_request_duration_seconds_count{code="404",method="GET",route="unmatched"} 1`,
		`slotmeta_http_requests_in_flight 1`, // the scrape itself
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, "some-key") {
		t.Errorf("a key leaked into a label")
	}
	// A second API on the same registry reuses the collectors.
	if _, err := New(Config{Backend: f, Registerer: reg}); err != nil {
		t.Fatalf("second New on one registry: %v", err)
	}
}

func TestOpenAPIAndConsole(t *testing.T) {
	f := newFake(t, 2)
	if w := do(t, newHandler(t, f), "GET", "/openapi.yaml", ""); w.Code != 404 {
		t.Fatalf("openapi without a spec: %d", w.Code)
	}
	if w := do(t, newHandler(t, f), "GET", "/console/", ""); w.Code != 404 {
		t.Fatalf("console without one: %d", w.Code)
	}
	console := chi.NewRouter()
	console.Get("/groups/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "group "+chi.URLParam(r, "id"))
	})
	h := newHandler(t, f, func(c *Config) {
		c.OpenAPI = []byte("openapi: 3.0.3\n")
		c.Console = func(http.Handler) http.Handler { return console }
	})
	w := do(t, h, "GET", "/openapi.yaml", "")
	if w.Code != 200 || w.Body.String() != "openapi: 3.0.3\n" || w.Header().Get("Content-Type") != "application/yaml" {
		t.Fatalf("openapi %d %q %v", w.Code, w.Body, w.Header())
	}
	if w := do(t, h, "GET", "/console/groups/7", ""); w.Code != 200 || w.Body.String() != "group 7" {
		t.Fatalf("console %d %q", w.Code, w.Body)
	}
}

func TestConfig(t *testing.T) {
	f := newFake(t, 2)
	if err := (Config{}).Validate(); err == nil {
		t.Fatal("a config without a backend validated")
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a backend succeeded")
	}
	if err := (Config{Backend: f, MaxBodyBytes: -1, RequestTimeout: -1}).Validate(); err == nil {
		t.Fatal("negative limits validated")
	}
	wrapped := prometheus.WrapRegistererWith(prometheus.Labels{"node": "1"}, prometheus.NewRegistry())
	if err := (Config{Backend: f, Registerer: wrapped}).Validate(); err == nil {
		t.Fatal("a Registerer that is no Gatherer, without a Gatherer, validated")
	}
	if err := (Config{Backend: f, Registerer: wrapped, Gatherer: prometheus.NewRegistry()}).Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Config{Backend: f}).Validate(); err != nil {
		t.Fatal(err)
	}
	d := Config{Backend: f}.withDefaults()
	if d.MaxBodyBytes != DefaultMaxBodyBytes || d.RequestTimeout != DefaultRequestTimeout || d.Logger == nil ||
		d.Registerer == nil || d.Gatherer == nil || d.Registerer == prometheus.DefaultRegisterer {
		t.Fatalf("defaults %+v", d)
	}
	// MaxBodyBytes is honoured.
	h := newHandler(t, f, func(c *Config) { c.MaxBodyBytes = 64 })
	if w := do(t, h, "PUT", "/v1/kv/k", `{"value":"`+strings.Repeat("v", 64)+`"}`); w.Code != 413 {
		t.Fatalf("body over a 64-byte limit: %d %s", w.Code, w.Body)
	}
	if n := len(f.Calls()); n != 0 {
		t.Fatalf("backend called %d times", n)
	}
}

// TestLeavingNodeIsNotReady: a draining or removed node fails /readyz and
// says why, so that a load balancer stops sending it requests.
func TestLeavingNodeIsNotReady(t *testing.T) {
	for state, says := range map[slotstore.NodeState]string{slotstore.NodeDraining: "is draining", slotstore.NodeRemoved: "was removed"} {
		f := newFake(t, 1)
		f.SetNodeState(f.node, state)
		w := do(t, newHandler(t, f), "GET", "/readyz", "")
		if w.Code != 503 {
			t.Fatalf("%s: %d", state, w.Code)
		}
		if e := decodeError(t, w); !strings.Contains(e.Message, says) {
			t.Fatalf("%s: %q", state, e.Message)
		}
	}
}
