package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/certs"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// secureNode is one node of a secured process cluster: its own
// certificates directory (a copy of the CA certificate, its node
// certificate), tokens file and secret file, all rewritten by the test.
type secureNode struct {
	*lkNode
	dir                  string
	api, raft, peer      string // host:port
	tokensPath, secretAt string
}

// startSecureCluster starts three nodes on loopback with TLS, tokens and a
// secret file; the CA stays in ca (the test issues from it).
func startSecureCluster(t *testing.T, ca, tokens, secret string) []*secureNode {
	t.Helper()
	nodes := make([]*secureNode, 3)
	var members []string
	for i := range nodes {
		n := &secureNode{dir: t.TempDir(), api: freePort(t), raft: freePort(t), peer: freePort(t)}
		n.tokensPath, n.secretAt = filepath.Join(n.dir, "tokens"), filepath.Join(n.dir, "secret")
		copyFile(t, filepath.Join(ca, "ca.crt"), filepath.Join(n.dir, "ca.crt"))
		if err := certs.CreateNode(n.dir, []string{"127.0.0.1"}, certs.CertOptions{CAKey: filepath.Join(ca, "ca.key"),
			CACert: filepath.Join(ca, "ca.crt")}); err != nil {
			t.Fatal(err)
		}
		writeFile(t, n.tokensPath, tokens)
		writeFile(t, n.secretAt, secret)
		nodes[i] = n
		members = append(members, fmt.Sprintf("%d=%s/%s/%s", i+1, n.raft, n.api, n.peer))
	}
	client := httpsClient(t, filepath.Join(ca, "ca.crt"))
	for i, n := range nodes {
		args := []string{"--node-id", fmt.Sprint(i + 1), "--data-dir", t.TempDir(), "--api-addr", n.api, "--raft-addr", n.raft,
			"--peer-addr", n.peer, "--initial-members", strings.Join(members, ","), "--certs-dir", n.dir, "--tokens-file", n.tokensPath,
			"--cluster-secret-file", n.secretAt, "--secret-overlap", "1m", "--rtt", "10ms", "--groups", "3", "--balancer=false"}
		n.lkNode = &lkNode{t: t, id: i + 1, args: args, api: "https://" + n.api, log: &lkSyncBuffer{}, client: client}
	}
	lk := make([]*lkNode, len(nodes))
	for i, n := range nodes {
		lk[i] = n.lkNode
	}
	launchLK(t, lk)
	return nodes
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // a reader sees the old file or the new one
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func concatFiles(t *testing.T, paths ...string) []byte {
	t.Helper()
	var out []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

func caPool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatal("no CA certificate")
	}
	return pool
}

func httpsClient(t *testing.T, caFile string) *http.Client {
	t.Helper()
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool(t, caFile)}}}
}

// servedSerial is the serial of the certificate addr presents now, to a
// client presenting cert (the Raft and peer ports require one).
func servedSerial(t *testing.T, addr, caFile string, cert *tls.Certificate) string {
	t.Helper()
	cfg := &tls.Config{RootCAs: caPool(t, caFile), ServerName: "127.0.0.1"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS to %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
}

// rotationLoad writes unique keys through every node until stopped,
// retrying retryable answers (with the same Idempotency-Key); anything
// else is a failure.
type rotationLoad struct {
	client  *http.Client
	token   atomic.Pointer[string]
	acked   atomic.Int64
	retried atomic.Int64
	longest atomic.Int64 // nanoseconds: the longest write, retries included
	// answered is, per writer, the token of its last answered request:
	// the old token is revoked only once no request carries it any more.
	answered [3]atomic.Pointer[string]
	mu       sync.Mutex
	failures []string
	keys     []string
	stop     chan struct{}
	wg       sync.WaitGroup
}

func (l *rotationLoad) run(api string, writer int) {
	defer l.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		key := fmt.Sprintf("rot-%d-%d", writer, i)
		start := time.Now()
		for attempt := 0; ; attempt++ {
			req, _ := http.NewRequest(http.MethodPut, "https://"+api+"/v1/kv/"+key, strings.NewReader(`{"value":"v"}`))
			req.Header.Set("Content-Type", "application/json")
			tok := l.token.Load()
			req.Header.Set("Authorization", "Bearer "+*tok)
			req.Header.Set("Idempotency-Key", key)
			resp, err := l.client.Do(req)
			if err != nil {
				l.fail(fmt.Sprintf("%s via %s: %v", key, api, err))
				break
			}
			l.answered[writer].Store(tok)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if d := int64(time.Since(start)); d > l.longest.Load() {
					l.longest.Store(d) // writers race benignly: a close second may be lost
				}
				l.acked.Add(1)
				l.mu.Lock()
				l.keys = append(l.keys, key)
				l.mu.Unlock()
				break
			}
			var e struct {
				Error struct {
					Retryable bool `json:"retryable"`
				} `json:"error"`
			}
			_ = json.Unmarshal(body, &e)
			if !e.Error.Retryable || resp.Header.Get("Retry-After") == "" || attempt > 50 {
				l.fail(fmt.Sprintf("%s via %s: %d %s", key, api, resp.StatusCode, body))
				break
			}
			l.retried.Add(1)
			time.Sleep(50 * time.Millisecond) // pacing of the retry the refusal asked for, not a wait
		}
	}
}

func (l *rotationLoad) fail(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 20 {
		l.failures = append(l.failures, s)
	}
}

// TestRotationUnderLoad: on a three-node cluster with TLS, tokens and a
// secret file, while clients write through every node, each credential is
// rotated with SIGHUP — the tokens (old and new accepted, then only the
// new), the cluster secret (node by node: the overlap keeps peer RPC
// working between nodes that have and have not reloaded) and the CA with
// overlap (both CAs trusted everywhere, every node's certificate re-issued
// by the new one — its API, peer and Raft ports present it — then the old
// CA dropped, after which its certificates open nothing) — and no write
// fails but with retryable answers; every acknowledged write is readable at
// the end. Each step's longest write is logged.
func TestRotationUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a process cluster")
	}
	ca := t.TempDir()
	if err := certs.CreateCA(ca, certs.CAOptions{}); err != nil {
		t.Fatal(err)
	}
	// The CA the certificates rotate to, and the bundle of both that the
	// test's clients trust throughout.
	ca2 := t.TempDir()
	if err := certs.CreateCA(ca2, certs.CAOptions{CommonName: "slotmeta CA 2"}); err != nil {
		t.Fatal(err)
	}
	both := filepath.Join(t.TempDir(), "both.crt")
	writeFile(t, both, string(concatFiles(t, filepath.Join(ca, "ca.crt"), filepath.Join(ca2, "ca.crt"))))
	const oldTok, newTok = "old-admin-token-0123456789", "new-admin-token-0123456789"
	nodes := startSecureCluster(t, ca, "admin "+oldTok+" ops-old\n", "first-cluster-secret-0123456789\n")
	load := &rotationLoad{client: httpsClient(t, both), stop: make(chan struct{})}
	tok := oldTok
	load.token.Store(&tok)
	for i, n := range nodes {
		load.wg.Add(1)
		go load.run(n.api, i)
	}
	hup := func(n *secureNode) {
		t.Helper()
		cmd, _, ok := n.running()
		if !ok {
			t.Fatalf("node %d is not running", n.id)
		}
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	security := func(n *secureNode) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "https://"+n.api+"/v1/cluster/security", nil)
		req.Header.Set("Authorization", "Bearer "+*load.token.Load())
		resp, err := load.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 {
			t.Fatalf("security of node %d: %d %v", n.id, resp.StatusCode, err)
		}
		return st
	}
	// settle lets the load run through each step: half a second, and then
	// until more writes were acknowledged; it reports the step's longest
	// write.
	settle := func(what string) {
		t.Helper()
		before := load.acked.Load()
		load.longest.Store(0)
		time.Sleep(500 * time.Millisecond) // a hold: the step runs under load for half a second at least
		testutil.WaitUntil(t, 20*time.Second, 50*time.Millisecond, "writes after "+what, func() bool { return load.acked.Load() > before+10 })
		t.Logf("%s: longest write %v", what, time.Duration(load.longest.Load()).Round(time.Millisecond))
	}
	settle("the start")

	// Tokens: both, then only the new one.
	for _, n := range nodes {
		writeFile(t, n.tokensPath, "admin "+oldTok+" ops-old\nadmin "+newTok+" ops-new\n")
		hup(n)
	}
	testutil.WaitUntil(t, 20*time.Second, 50*time.Millisecond, "the new token on every node", func() bool {
		for _, n := range nodes {
			if security(n)["tokens"] != 2.0 {
				return false
			}
		}
		return true
	})
	tok2 := newTok
	load.token.Store(&tok2)
	testutil.WaitUntil(t, 20*time.Second, 10*time.Millisecond, "every writer on the new token", func() bool {
		for i := range nodes {
			if p := load.answered[i].Load(); p == nil || *p != newTok {
				return false
			}
		}
		return true
	})
	for _, n := range nodes {
		writeFile(t, n.tokensPath, "admin "+newTok+" ops-new\n")
		hup(n)
	}
	testutil.WaitUntil(t, 20*time.Second, 50*time.Millisecond, "the old token gone", func() bool {
		req, _ := http.NewRequest(http.MethodGet, "https://"+nodes[2].api+"/v1/kv/x", nil)
		req.Header.Set("Authorization", "Bearer "+oldTok)
		resp, err := load.client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized
	})
	settle("the token rotation")

	// The cluster secret, node by node, with load between the steps.
	for _, n := range nodes {
		writeFile(t, n.secretAt, "second-cluster-secret-0123456789\n")
		hup(n)
		testutil.WaitUntil(t, 20*time.Second, 50*time.Millisecond, fmt.Sprintf("node %d's secret overlap", n.id), func() bool { return security(n)["secret_overlap_until_ms"] != nil })
		settle(fmt.Sprintf("node %d's new secret", n.id))
	}

	// The CA, with overlap: every node trusts both CAs, then each gets a
	// certificate of the new one, then the old CA goes from every bundle.
	nodeCert := func(n *secureNode) *tls.Certificate {
		c, err := tls.LoadX509KeyPair(filepath.Join(n.dir, "node.crt"), filepath.Join(n.dir, "node.key"))
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}
	reloaded := func(n *secureNode, what string) {
		t.Helper()
		if st := security(n); st["reload_error"] != nil {
			t.Fatalf("node %d after %s: %v", n.id, what, st["reload_error"])
		}
		settle(fmt.Sprintf("node %d's %s", n.id, what))
	}
	for _, n := range nodes {
		copyFile(t, both, filepath.Join(n.dir, "ca.crt"))
		hup(n)
		reloaded(n, "CA bundle of both CAs")
	}
	for _, n := range nodes {
		old := servedSerial(t, n.raft, both, nodeCert(n))
		if err := certs.CreateNode(n.dir, []string{"127.0.0.1"}, certs.CertOptions{CAKey: filepath.Join(ca2, "ca.key"),
			CACert: filepath.Join(ca2, "ca.crt"), Overwrite: true}); err != nil {
			t.Fatal(err)
		}
		want := nodeCert(n).Leaf.SerialNumber.Text(16)
		if want == old {
			t.Fatal("the re-issued certificate has the old serial")
		}
		hup(n)
		testutil.WaitUntil(t, 20*time.Second, 50*time.Millisecond, fmt.Sprintf("node %d's new certificate on its API, peer and Raft ports", n.id), func() bool {
			return servedSerial(t, n.api, both, nil) == want && servedSerial(t, n.peer, both, nodeCert(n)) == want &&
				servedSerial(t, n.raft, both, nodeCert(n)) == want
		})
		reloaded(n, "certificate of the new CA")
	}
	for _, n := range nodes {
		copyFile(t, filepath.Join(ca2, "ca.crt"), filepath.Join(n.dir, "ca.crt"))
		hup(n)
		reloaded(n, "bundle without the old CA")
	}
	// The old CA's certificates open nothing now.
	stale := t.TempDir()
	copyFile(t, filepath.Join(ca, "ca.crt"), filepath.Join(stale, "ca.crt"))
	if err := certs.CreateNode(stale, []string{"127.0.0.1"}, certs.CertOptions{CAKey: filepath.Join(ca, "ca.key"), CACert: filepath.Join(ca, "ca.crt")}); err != nil {
		t.Fatal(err)
	}
	oldCert, err := tls.LoadX509KeyPair(filepath.Join(stale, "node.crt"), filepath.Join(stale, "node.key"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", nodes[0].raft, &tls.Config{RootCAs: caPool(t, both), ServerName: "127.0.0.1", Certificates: []tls.Certificate{oldCert}})
	if err == nil {
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a certificate of the retired CA was accepted on the Raft port")
		}
	}
	close(load.stop)
	load.wg.Wait()
	if len(load.failures) > 0 {
		t.Fatalf("%d writes acknowledged, %d retried; failures:\n%s", load.acked.Load(), load.retried.Load(), strings.Join(load.failures, "\n"))
	}
	// Every acknowledged write is there (a linearizable read through node 1).
	for _, key := range load.keys {
		req, _ := http.NewRequest(http.MethodGet, "https://"+nodes[0].api+"/v1/kv/"+key, nil)
		req.Header.Set("Authorization", "Bearer "+newTok)
		resp, err := load.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("acknowledged %s: %d", key, resp.StatusCode)
		}
	}
	t.Logf("rotation under load: %d writes acknowledged, %d retryable answers retried, 0 failures", load.acked.Load(), load.retried.Load())
}
