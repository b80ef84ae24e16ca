package slotstoretest

import (
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/slotstore/cluster"
)

// ServeAPI serves node n's REST API over plain HTTP on a loopback port, as
// cmd/server wires it (a fresh metrics registry per server), until the test
// ends. tune, if given, adjusts the API's config first (auth, the console,
// the OpenAPI document, …).
func ServeAPI(t testing.TB, n *cluster.Node, tune ...func(*httpapi.Config)) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := httpapi.Config{Backend: n, Registerer: reg, Gatherer: reg}
	for _, f := range tune {
		f(&cfg)
	}
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}
