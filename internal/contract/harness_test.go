package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta"
	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/console"
	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

var (
	specOnce sync.Once
	specRaw  rawSpec
	specErr  error
)

// contractSpec returns the spec, loaded and validated, and a fresh copy of
// its raw form.
func contractSpec(t testing.TB) (*spec, rawSpec) {
	t.Helper()
	specOnce.Do(func() {
		specRaw, specErr = loadRawSpec()
	})
	if specErr != nil {
		t.Fatalf("spec: %v", specErr)
	}
	s, err := newSpec(cloneRaw(specRaw))
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	return s, cloneRaw(specRaw)
}

// apiConfig is the API as cmd/server configures it, on backend b.
func apiConfig(b httpapi.Backend) httpapi.Config {
	reg := prometheus.NewRegistry()
	cfg := httpapi.Config{
		Backend: b, Registerer: reg, Gatherer: reg,
		Logger:  slog.New(slog.DiscardHandler),
		OpenAPI: slotmeta.OpenAPI,
		Docs:    console.Docs(),
		Console: func(http.Handler) http.Handler { return http.NotFoundHandler() },
	}
	if sink, ok := b.(audit.Sink); ok {
		cfg.Audit = audit.New(sink, cfg.Logger)
	}
	return cfg
}

// node is one real node (real Raft and Pebble, slotstoretest) behind the
// real API, and an HTTP client whose every exchange is checked against the
// spec.
type node struct {
	t       *testing.T
	spec    *spec
	backend httpapi.Backend
	handler http.Handler
	url     string
	tr      *validatingTransport
	client  *http.Client
}

func startNode(t *testing.T) *node {
	t.Helper()
	s, _ := contractSpec(t)
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 4})
	n := &node{t: t, spec: s, backend: c.Nodes[0]}
	n.handler, n.url = n.serve(apiConfig(n.backend))
	n.tr = &validatingTransport{t: t, spec: s}
	n.client = &http.Client{Transport: n.tr, Timeout: 20 * time.Second}
	return n
}

// serve starts an HTTP server for cfg and returns its handler and URL.
func (n *node) serve(cfg httpapi.Config) (http.Handler, string) {
	n.t.Helper()
	h, err := httpapi.New(cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	n.t.Cleanup(ts.Close)
	return h, ts.URL
}

// reply is an answer with its body read.
type reply struct {
	code   int
	header http.Header
	body   []byte
}

func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %.300s: %v", r.body, err)
	}
}

func (r reply) errCode() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Code
}

// req describes one request of the walk.
type req struct {
	base    string // server URL; "" is the node's main server
	method  string
	path    string
	body    string
	headers []string // name, value pairs
	refused bool     // the spec must refuse the request too
}

// do sends r through the validating client and requires status want.
func (n *node) do(want int, r req) reply {
	n.t.Helper()
	base := r.base
	if base == "" {
		base = n.url
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r.refused {
		ctx = refused(ctx)
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequestWithContext(ctx, r.method, base+r.path, body)
	if err != nil {
		n.t.Fatal(err)
	}
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(r.headers); i += 2 {
		hr.Header.Set(r.headers[i], r.headers[i+1])
	}
	resp, err := n.client.Do(hr)
	if err != nil {
		n.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		n.t.Fatal(err)
	}
	if resp.StatusCode != want {
		n.t.Fatalf("%s %s: %d %.300s, want %d", r.method, r.path, resp.StatusCode, b, want)
	}
	return reply{code: resp.StatusCode, header: resp.Header, body: b}
}

// unready is a node that says it is not ready; everything else is the real
// node's. Embedding the interface keeps it whole as Backend grows.
type unready struct{ httpapi.Backend }

func (unready) Ready() error {
	return slotstore.Errorf(slotstore.CodeRouteNotReady, "contract test: pretending group 1 has no live leader")
}

// bigBody is a JSON object of about size bytes.
func bigBody(size int) string {
	var b bytes.Buffer
	b.WriteString(`{"value":"`)
	b.WriteString(strings.Repeat("x", size))
	b.WriteString(`"}`)
	return b.String()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
