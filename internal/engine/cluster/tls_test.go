package cluster_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/certs"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// putKV writes key=key through n, retrying what says retry, for up to 20s.
// It returns the route the write took.
func putKV(t *testing.T, n *cluster.Node, key string) slotstore.Route {
	t.Helper()
	var route slotstore.Route
	testutil.WaitFor(t, 20*time.Second, 50*time.Millisecond, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, r, err := n.Propose(ctx, &meta.PutKV{Key: key, Value: []byte(key)})
		cancel()
		if err == nil && res.OK() {
			route = r
			return true, ""
		}
		if err == nil || !slotstore.ErrorCode(err).Retryable() {
			t.Fatalf("put %s through node %d: %v %+v", key, n.NodeID(), err, res)
		}
		return false, fmt.Sprintf("put %s through node %d: %v", key, n.NodeID(), err)
	})
	return route
}

// getKV reads key through n (linearizable) and requires the value putKV wrote.
func getKV(t *testing.T, n *cluster.Node, key string) meta.ReadInfo {
	t.Helper()
	var info meta.ReadInfo
	testutil.WaitFor(t, 20*time.Second, 50*time.Millisecond, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, i, err := n.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key}, meta.Linearizable)
		cancel()
		if err == nil {
			if kv, _ := v.(*meta.KV); kv == nil || string(kv.Value) != key {
				t.Fatalf("read %s through node %d: %+v", key, n.NodeID(), v)
			}
			info = i
			return true, ""
		}
		if !slotstore.ErrorCode(err).Retryable() {
			t.Fatalf("read %s through node %d: %v", key, n.NodeID(), err)
		}
		return false, fmt.Sprintf("read %s through node %d: %v", key, n.NodeID(), err)
	})
	return info
}

func peerAddr(t *testing.T, n *cluster.Node, id slotstore.NodeID) string {
	t.Helper()
	info, ok := n.Controller().Nodes[id]
	if !ok || info.PeerAddr == "" {
		t.Fatalf("node %d does not know node %d's peer address", n.NodeID(), id)
	}
	return info.PeerAddr
}

// isTLSAlert reports whether err is a TLS alert the other side sent: it
// refused this side's certificate (or the lack of one).
func isTLSAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error" && strings.Contains(op.Error(), "tls:")
}

// TestTLSClusterWritesAndReadsThroughEveryNode: three nodes with mutual TLS
// elect leaders, replicate, forward writes over peer RPC, and a fourth node
// joins through a node's API and serves reads and writes.
func TestTLSClusterWritesAndReadsThroughEveryNode(t *testing.T) {
	ca := slotstoretest.NewCA(t, "slotmeta-test")
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 4, Tune: func(cfg *cluster.Config) {
		cfg.TLS = ca.Issue(t, fmt.Sprintf("node-%d", cfg.NodeID))
	}})
	// Ready says every data group has a leader, not that every node has
	// heard who leads the controller group yet (on a loaded machine a node
	// learns it a moment later): wait for it.
	for _, n := range c.Nodes {
		testutil.WaitUntil(t, 10*time.Second, 20*time.Millisecond, fmt.Sprintf("node %d knows the controller leader", n.NodeID()),
			func() bool { return n.ControllerLeader() != 0 })
	}
	var keys []string
	forwarded := 0
	for _, n := range c.Nodes {
		for k := 0; k < 8; k++ {
			key := fmt.Sprintf("tls-%d-%d", n.NodeID(), k)
			if route := putKV(t, n, key); route.LeaderNodeID != n.NodeID() {
				forwarded++
			}
			keys = append(keys, key)
		}
	}
	if forwarded == 0 {
		t.Fatal("no write was forwarded to a leader over peer RPC")
	}
	for _, n := range c.Nodes {
		for _, key := range keys {
			getKV(t, n, key)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range c.Nodes {
		for _, m := range c.Nodes {
			if m != n {
				if err := n.PeerLeaders(ctx, peerAddr(t, n, m.NodeID())); err != nil {
					t.Fatalf("peer RPC from node %d to node %d: %v", n.NodeID(), m.NodeID(), err)
				}
			}
		}
	}

	// The join path: registration through node 1's API — HTTPS with its
	// node certificate, as cmd/server serves it — then Raft (TLS) brings
	// the new node the controller state.
	reg := prometheus.NewRegistry()
	h, err := httpapi.New(httpapi.Config{Backend: c.Nodes[0], Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	files := ca.Issue(t, "node-1-api")
	served, err := certs.NewReloader(certs.Files{CA: files.CAFile, Cert: files.CertFile, Key: files.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.TLS = served.ServerConfig(tls.VerifyClientCertIfGiven)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	n4 := c.Join(u.Host)
	putKV(t, n4, "tls-joined")
	for _, key := range []string{keys[0], keys[len(keys)-1], "tls-joined"} {
		if info := getKV(t, n4, key); info.ServedBy == n4.NodeID() {
			t.Fatalf("node 4 holds no replica, yet served %s itself", key)
		}
	}
}

// TestTLSNodeOfAnotherCACannotTakePart: a founding member whose certificate
// another CA signed never receives a Raft entry while the other two commit,
// and peer RPC to and from it fails the TLS handshake.
func TestTLSNodeOfAnotherCACannotTakePart(t *testing.T) {
	ca := slotstoretest.NewCA(t, "slotmeta-test")
	rogueCA := slotstoretest.NewCA(t, "rogue")
	members := make([]controller.Node, 3)
	for i := range members {
		members[i] = controller.Node{ID: slotstore.NodeID(i + 1), RaftAddr: slotstoretest.FreeAddr(t),
			PeerAddr: slotstoretest.FreeAddr(t), APIAddr: slotstoretest.FreeAddr(t)}
	}
	tlsOf := []peer.TLSConfig{ca.Issue(t, "node-1"), ca.Issue(t, "node-2"), rogueCA.Issue(t, "node-3")}
	nodes := make([]*cluster.Node, 3)
	for i, m := range members {
		n, err := cluster.Start(cluster.Config{NodeID: m.ID, DataDir: t.TempDir(), RaftAddr: m.RaftAddr, PeerAddr: m.PeerAddr,
			APIAddr: m.APIAddr, ClusterSecret: slotstoretest.Secret, TLS: tlsOf[i], InitialMembers: members,
			GroupCount: 4, ReplicationFactor: 3, RTT: 20 * time.Millisecond, ElectionRTT: 10, HeartbeatRTT: 1})
		if err != nil {
			t.Fatalf("start node %d: %v", m.ID, err)
		}
		nodes[i] = n
		t.Cleanup(func() { _ = n.Close() })
	}
	n1, n2, rogue := nodes[0], nodes[1], nodes[2]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range []*cluster.Node{n1, n2} {
		if err := n.WaitReady(ctx); err != nil {
			t.Fatalf("node %d: %v", n.NodeID(), err)
		}
	}
	// Ready does not say node 1 has heard who leads the controller: wait.
	testutil.WaitUntil(t, 10*time.Second, 20*time.Millisecond, "node 1 knows the controller leader", func() bool { return n1.ControllerLeader() != 0 })
	if l := n1.ControllerLeader(); l == rogue.NodeID() {
		t.Fatalf("controller leader %d", l)
	}

	// Raft: for a window of many election timeouts, while nodes 1 and 2 keep
	// committing, node 3 receives nothing — not the bootstrap, not a leader.
	window := time.Now().Add(3 * time.Second)
	writes := 0
	for time.Now().Before(window) {
		if st := rogue.Controller(); st.Bootstrapped || rogue.ControllerLeader() != 0 || rogue.Ready() == nil {
			t.Fatalf("node 3 (another CA) took part: bootstrapped %v, controller leader %d", st.Bootstrapped, rogue.ControllerLeader())
		}
		putKV(t, nodes[writes%2], fmt.Sprintf("rogue-window-%d", writes))
		writes++
	}
	if writes < 2 {
		t.Fatalf("only %d writes committed in the window", writes)
	}

	// Raft transport, directly: node 1's Raft listener refuses node 3's
	// certificate (a client that trusts the right CA, so only the
	// certificate it presents is wrong).
	rogueClient := slotstoretest.ClientTLS(t, peer.TLSConfig{CAFile: ca.File, CertFile: tlsOf[2].CertFile, KeyFile: tlsOf[2].KeyFile})
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", members[0].RaftAddr, rogueClient)
	if err == nil {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if !isTLSAlert(err) {
		t.Fatalf("raft connection with another CA's certificate: %v, want a TLS alert", err)
	}

	// Peer RPC, both ways, with the nodes' own clients: neither side accepts
	// the other's certificate.
	var verr *tls.CertificateVerificationError
	if err := n1.PeerLeaders(ctx, members[2].PeerAddr); !errors.As(err, &verr) {
		t.Fatalf("peer RPC from node 1 to node 3: %v, want a certificate verification error", err)
	}
	if err := rogue.PeerLeaders(ctx, members[0].PeerAddr); !errors.As(err, &verr) {
		t.Fatalf("peer RPC from node 3 to node 1: %v, want a certificate verification error", err)
	}
	// And node 1's peer server refuses node 3's certificate.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: rogueClient}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+members[0].PeerAddr+"/peer/v1/leaders", nil)
	req.Header.Set("X-Slotmeta-Secret", slotstoretest.Secret)
	req.Header.Set("X-Slotmeta-Timeout-Ms", "1000")
	if resp, err := hc.Do(req); !isTLSAlert(err) {
		if resp != nil {
			resp.Body.Close()
		}
		t.Fatalf("peer RPC with another CA's certificate: %v, want a TLS alert", err)
	}
	if err := n1.PeerLeaders(ctx, members[1].PeerAddr); err != nil {
		t.Fatalf("peer RPC between the good nodes: %v", err)
	}
}

// TestTLSPeerRPCRefusesRequestsWithoutAClientCertificate: with TLS on, a
// peer request needs a client certificate of the CA, and still the secret.
func TestTLSPeerRPCRefusesRequestsWithoutAClientCertificate(t *testing.T) {
	ca := slotstoretest.NewCA(t, "slotmeta-test")
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Tune: func(cfg *cluster.Config) {
		cfg.TLS = ca.Issue(t, "node-1")
	}})
	addr := peerAddr(t, c.Nodes[0], 1)
	send := func(cfg *tls.Config, scheme, secret string) (*http.Response, error) {
		t.Helper()
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		defer hc.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodGet, scheme+"://"+addr+"/peer/v1/leaders", nil)
		if secret != "" {
			req.Header.Set("X-Slotmeta-Secret", secret)
		}
		req.Header.Set("X-Slotmeta-Timeout-Ms", "1000")
		resp, err := hc.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		return resp, err
	}
	noCert := slotstoretest.ClientTLS(t, peer.TLSConfig{CAFile: ca.File})
	if _, err := send(noCert, "https", slotstoretest.Secret); !isTLSAlert(err) {
		t.Fatalf("TLS without a client certificate: %v, want a TLS alert", err)
	}
	if resp, err := send(nil, "http", slotstoretest.Secret); err == nil && resp.StatusCode == http.StatusOK {
		t.Fatal("plain HTTP was served")
	}
	good := slotstoretest.ClientTLS(t, ca.Issue(t, "client"))
	if resp, err := send(good, "https", ""); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("client certificate without the secret: %v %v, want 401", resp, err)
	}
	if resp, err := send(good, "https", slotstoretest.Secret); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("client certificate and secret: %v %v, want 200", resp, err)
	}
}

// TestTLSValidateNeedsAllThreeFilesThatParse: all three files or none;
// Validate names the missing ones and refuses files that do not load or a
// certificate of another CA.
func TestTLSValidateNeedsAllThreeFilesThatParse(t *testing.T) {
	ca := slotstoretest.NewCA(t, "slotmeta-test")
	files := ca.Issue(t, "node-1")
	other := slotstoretest.NewCA(t, "other").Issue(t, "node-1")
	garbage := t.TempDir() + "/garbage.pem"
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := func(tc peer.TLSConfig) cluster.Config {
		cfg := cluster.Config{NodeID: 1, DataDir: t.TempDir(), RaftAddr: "127.0.0.1:1", TLS: tc}
		cfg.EnsureDefaults()
		return cfg
	}
	for _, tc := range []struct {
		name string
		tls  peer.TLSConfig
		want string // "" accepts
	}{
		{"none", peer.TLSConfig{}, ""},
		{"all three", files, ""},
		{"ca only", peer.TLSConfig{CAFile: files.CAFile}, "missing: certificate file, key file"},
		{"no key", peer.TLSConfig{CAFile: files.CAFile, CertFile: files.CertFile}, "missing: key file"},
		{"no ca", peer.TLSConfig{CertFile: files.CertFile, KeyFile: files.KeyFile}, "missing: CA file"},
		{"no cert", peer.TLSConfig{CAFile: files.CAFile, KeyFile: files.KeyFile}, "missing: certificate file"},
		{"ca file absent", peer.TLSConfig{CAFile: files.CAFile + ".absent", CertFile: files.CertFile, KeyFile: files.KeyFile}, "no such file"},
		{"ca not pem", peer.TLSConfig{CAFile: garbage, CertFile: files.CertFile, KeyFile: files.KeyFile}, "no PEM CERTIFICATE"},
		{"cert not pem", peer.TLSConfig{CAFile: files.CAFile, CertFile: garbage, KeyFile: files.KeyFile}, "certificate"},
		{"key of another cert", peer.TLSConfig{CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: other.KeyFile}, "private key does not match"},
		{"cert of another CA", peer.TLSConfig{CAFile: files.CAFile, CertFile: other.CertFile, KeyFile: other.KeyFile}, "does not verify"},
	} {
		cfg := base(tc.tls)
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
