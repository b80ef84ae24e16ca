package slotstoretest

import (
	"context"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/httpapi"
)

// ServeAPI serves node n's REST API over plain HTTP on a loopback port, as
// cmd/server wires it (a fresh metrics registry per server), until the test
// ends. tune, if given, adjusts the API's config first (auth, the console,
// the OpenAPI document, …).
func ServeAPI(t testing.TB, n *cluster.Node, tune ...func(*httpapi.Config)) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	serve(t, ts, n, tune)
	return ts
}

// serve starts ts with node n's API as cmd/server wires it, its watch
// streams ended by the server's Shutdown (StopAPI) as cmd/server's drain
// ends them, until the test ends.
func serve(t testing.TB, ts *httptest.Server, n *cluster.Node, tune []func(*httpapi.Config)) {
	t.Helper()
	reg := prometheus.NewRegistry()
	stopping := make(chan struct{})
	var once sync.Once
	ts.Config.RegisterOnShutdown(func() { once.Do(func() { close(stopping) }) })
	cfg := httpapi.Config{Backend: n, Registerer: reg, Gatherer: reg, Stopping: stopping}
	for _, f := range tune {
		f(&cfg)
	}
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = h
	ts.Start()
	// Stopped as cmd/server stops it, not just closed: Close waits for
	// every request, and a watch stream (the route-aware client's route
	// stream) ends only when the server drains it — a server started after
	// the client (a node restarted during the test) is cleaned up before
	// the client is closed, and its Close waited forever (make test's
	// chaos, seed 2, hung 24 minutes).
	t.Cleanup(func() { StopAPI(ts) })
}

// StopAPI stops an API server of ServeAPI or ServeAPIAt as cmd/server stops
// its own: a drain first — the watch streams end (a stream never ends by
// itself), requests in flight are answered — bounded by 5 s, then Close.
func StopAPI(ts *httptest.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ts.Config.Shutdown(ctx)
	ts.Close()
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
	ts := httptest.NewUnstartedServer(nil)
	_ = ts.Listener.Close()
	ts.Listener = l
	serve(t, ts, n, tune)
	return ts
}
