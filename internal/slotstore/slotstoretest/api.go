package slotstoretest

import (
	"net"
	"net/http"
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
	ts := httptest.NewServer(apiHandler(t, n, tune))
	t.Cleanup(ts.Close)
	return ts
}

// apiHandler is node n's API as cmd/server wires it.
func apiHandler(t testing.TB, n *cluster.Node, tune []func(*httpapi.Config)) http.Handler {
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
	return h
}

// ServeAPIs serves every node's REST API on the address the node
// advertises (cluster.Config.APIAddr, which GET /v1/cluster/nodes names),
// as a real deployment does: a client that learns the nodes' addresses
// from the cluster reaches them there. It returns the servers by node
// index; closing one makes its address refuse connections, as a stopped
// process does.
func (c *Cluster) ServeAPIs(tune ...func(*httpapi.Config)) []*httptest.Server {
	c.t.Helper()
	servers := make([]*httptest.Server, len(c.Nodes))
	for i, n := range c.Nodes {
		servers[i] = ServeAPIAt(c.t, n, c.APIAddr(i), tune...)
	}
	return servers
}

// APIAddr is the API address node i (0-based) advertises.
func (c *Cluster) APIAddr(i int) string { return c.cfgs[i].APIAddr }

// ServeAPIAt is ServeAPI on addr (a node's advertised address, again after
// a restart: the same URL before and after).
func ServeAPIAt(t testing.TB, n *cluster.Node, addr string, tune ...func(*httpapi.Config)) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("API address %s: %v", addr, err)
	}
	ts := httptest.NewUnstartedServer(apiHandler(t, n, tune))
	_ = ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}
