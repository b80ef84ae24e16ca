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
		h := apiHandler(c.t, n, tune)
		l, err := net.Listen("tcp", c.cfgs[i].APIAddr)
		if err != nil {
			c.t.Fatalf("node %d's API address: %v", i+1, err)
		}
		ts := httptest.NewUnstartedServer(h)
		_ = ts.Listener.Close()
		ts.Listener = l
		ts.Start()
		c.t.Cleanup(ts.Close)
		servers[i] = ts
	}
	return servers
}
