// Package nethost runs a slotmeta cluster as real processes on hosts of
// their own: one Linux network namespace per node, each with its own
// address on one bridge, so that traffic between nodes crosses real kernel
// links that a test can cut (ip link set … down: packets vanish, nothing is
// refused) or make lossy (nftables' random drop), and so that a node can be killed
// with SIGKILL and started again on its data. The test process reaches every
// node's API through the bridge from the root namespace.
//
// It needs root and the ip command (iproute2), and nft for lossy links;
// Available and CanLose say why not when they are missing, and tests skip. Names are derived from the
// process id and a counter, so parallel test processes do not collide; every
// namespace, link and process a Cluster creates is removed by Close (which
// Start registers with t.Cleanup), and only processes it started are ever
// signalled.
//
// Concurrency contract: the fault methods (Cut, Heal, Loss, Kill, Start)
// may be called from any goroutine, but a test changes one host at a time;
// Cluster owns its processes' wait goroutines, which end when they exit.
package nethost

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/certs"
)

// Ports every node listens on, on its own address.
const (
	APIPort  = 8080
	RaftPort = 9080
	PeerPort = 9180
)

// Options shape a cluster.
type Options struct {
	Bin   string   // the slotmeta binary
	Nodes int      // default 3
	Args  []string // extra flags for every node
	// Token is the admin bearer token every node accepts (beyond loopback
	// the API requires tokens) and Secret the cluster secret; defaults are
	// fixed test values.
	Token, Secret string
	// TokensLines are more lines of the tokens file every node reads (e.g.
	// "admin cert:ops" for a client certificate).
	TokensLines []string
	// Command, when set, replaces the slotmeta command line of each host
	// (binary first): to run another system on the same hosts and links,
	// for comparison. Ready then tells when a host serves (default: the
	// node's /readyz answers 200).
	Command func(h *Host, hosts []*Host) []string
	Ready   func(h *Host) bool
	// DataRoot, when set, is the directory the nodes' data directories go
	// under (default: the test's temporary directory), e.g. a tmpfs so that
	// one shared disk does not bound what many nodes can do.
	DataRoot string
	// DiskBytes, when above 0, gives every node a disk of its own: its
	// data directory is a tmpfs of that size (disk.go; root).
	DiskBytes int64
	// CPU, when above 0, caps every node's process at that many cores (a
	// cgroup v1 cpu quota; CanCap says whether it can), so that capacity is
	// per node as on real hosts.
	CPU float64
	// TLS gives every host a node certificate for its address, signed by a
	// CA of the cluster's (CAFile): Raft and peer RPC run mutual TLS and the
	// API HTTPS (Client trusts the CA). Without it the nodes run with
	// --insecure: plaintext between hosts, as the measurements that predate
	// TLS did.
	TLS bool
}

// Available returns nil when this process can create network namespaces,
// else why not.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("nethost: needs root (network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("nethost: ip (iproute2) not found")
	}
	return nil
}

// CanLose returns nil when Host.Loss can work (the nft command is there).
func CanLose() error {
	if _, err := exec.LookPath("nft"); err != nil {
		return errors.New("nethost: nft (nftables) not found: no lossy links")
	}
	return nil
}

// Cluster is a running set of hosts.
type Cluster struct {
	t        testing.TB
	o        Options
	tag      string // unique name part: pid and counter
	bridge   string
	subnet   string // "10.a.b." (hosts .1…, the bridge .254)
	dir      string
	tokens   string // the tokens file every node reads
	dataRoot string // where the nodes' data directories are
	caDir    string // the CA (Options.TLS)
	client   *http.Client
	Hosts    []*Host
	closed   atomic.Bool
}

var seq atomic.Uint32

// Start creates the hosts, starts one node on each (founding members of
// one cluster) and waits until every node is ready.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Token == "" {
		o.Token = "nethost-admin-token"
	}
	if o.Secret == "" {
		o.Secret = "nethost-cluster-secret"
	}
	n := seq.Add(1)
	c := &Cluster{t: t, o: o, tag: fmt.Sprintf("%d%c", os.Getpid()%100000, 'a'+rune(n%26)), dir: t.TempDir()}
	c.dataRoot = c.dir
	if o.DataRoot != "" {
		d, err := os.MkdirTemp(o.DataRoot, "nethost-")
		if err != nil {
			t.Fatal(err)
		}
		c.dataRoot = d
		t.Cleanup(func() { _ = os.RemoveAll(d) })
	}
	c.bridge = "smb" + c.tag
	t.Cleanup(c.Close)
	var err error
	if c.subnet, err = freeSubnet(os.Getpid(), n); err != nil {
		t.Fatal(err)
	}
	c.client = &http.Client{Timeout: time.Second}
	if o.TLS {
		c.caDir = filepath.Join(c.dir, "ca")
		if err := certs.CreateCA(c.caDir, certs.CAOptions{}); err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(filepath.Join(c.caDir, certs.CACertFile))
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			t.Fatalf("nethost: CA: %v", err)
		}
		c.client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	tokens := filepath.Join(c.dir, "tokens")
	if err := os.WriteFile(tokens, []byte("admin "+o.Token+" nethost-admin\n"+strings.Join(o.TokensLines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.must("ip", "link", "add", c.bridge, "type", "bridge")
	c.must("ip", "addr", "add", c.subnet+"254/24", "dev", c.bridge)
	c.must("ip", "link", "set", c.bridge, "up")
	c.tokens = tokens
	var members []string
	for i := 1; i <= o.Nodes; i++ {
		h := c.newHost(i)
		members = append(members, fmt.Sprintf("%d=%s/%s/%s", i, h.addr(RaftPort), h.addr(APIPort), h.addr(PeerPort)))
	}
	for _, h := range c.Hosts {
		if o.Command != nil {
			h.cmdline = o.Command(h, c.Hosts)
			h.Start()
			continue
		}
		h.cmdline = append(c.nodeArgs(h), "--initial-members", strings.Join(members, ","))
		h.cmdline = append(h.cmdline, o.Args...)
		h.Start()
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, h := range c.Hosts {
		h.WaitReady(deadline)
	}
	return c
}

// newHost creates host i: its namespace, its link to the bridge and its
// address.
func (c *Cluster) newHost(i int) *Host {
	h := &Host{c: c, ID: i, NS: fmt.Sprintf("smh%sn%d", c.tag, i), Veth: fmt.Sprintf("smv%sn%d", c.tag, i),
		IP: fmt.Sprintf("%s%d", c.subnet, i), dataDir: filepath.Join(c.dataRoot, fmt.Sprintf("node%d", i))}
	c.Hosts = append(c.Hosts, h)
	if c.o.DiskBytes > 0 {
		if err := h.mountDisk(); err != nil {
			c.t.Fatal(err)
		}
	}
	if c.o.TLS {
		h.certsDir = filepath.Join(c.dir, fmt.Sprintf("certs%d", i))
		if err := os.MkdirAll(h.certsDir, 0o700); err != nil {
			c.t.Fatal(err)
		}
		pem, err := os.ReadFile(filepath.Join(c.caDir, certs.CACertFile))
		if err == nil {
			err = os.WriteFile(filepath.Join(h.certsDir, certs.CACertFile), pem, 0o600)
		}
		if err == nil {
			err = certs.CreateNode(h.certsDir, []string{h.IP}, certs.CertOptions{CACert: filepath.Join(c.caDir, certs.CACertFile),
				CAKey: filepath.Join(c.caDir, certs.CAKeyFile)})
		}
		if err != nil {
			c.t.Fatal(err)
		}
	}
	c.must("ip", "netns", "add", h.NS)
	c.must("ip", "link", "add", h.Veth, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
	c.must("ip", "link", "set", h.Veth, "master", c.bridge, "up")
	c.must("ip", "-n", h.NS, "addr", "add", h.IP+"/24", "dev", "eth0")
	c.must("ip", "-n", h.NS, "link", "set", "eth0", "up")
	c.must("ip", "-n", h.NS, "link", "set", "lo", "up")
	return h
}

// nodeArgs is the command line every slotmeta node on h starts with.
func (c *Cluster) nodeArgs(h *Host) []string {
	args := []string{c.o.Bin,
		"--node-id", fmt.Sprint(h.ID), "--data-dir", h.dataDir,
		"--api-addr", h.addr(APIPort), "--raft-addr", h.addr(RaftPort), "--peer-addr", h.addr(PeerPort),
		"--cluster-secret", c.o.Secret, "--tokens-file", c.tokens,
	}
	if c.o.TLS {
		return append(args, "--certs-dir", h.certsDir)
	}
	return append(args, "--insecure")
}

// Client calls the nodes' APIs (over HTTPS against the cluster's CA with
// Options.TLS), with a 1 s timeout.
func (c *Cluster) Client() *http.Client { return c.client }

// CAFile is the cluster's CA certificate (Options.TLS; "" without).
func (c *Cluster) CAFile() string {
	if c.caDir == "" {
		return ""
	}
	return filepath.Join(c.caDir, certs.CACertFile)
}

// AddHost creates one more host whose node joins the running cluster
// through host 1's API (with the cluster's admin token), with the
// cluster's flags and extra, and waits until it is ready.
func (c *Cluster) AddHost(extra ...string) *Host {
	c.t.Helper()
	h := c.newHost(len(c.Hosts) + 1)
	h.cmdline = append(c.nodeArgs(h), "--join", c.Hosts[0].addr(APIPort), "--join-token", c.o.Token)
	h.cmdline = append(append(h.cmdline, c.o.Args...), extra...)
	h.Start()
	h.WaitReady(time.Now().Add(60 * time.Second))
	return h
}

// Token is the admin bearer token of the cluster's API.
func (c *Cluster) Token() string { return c.o.Token }

// Close stops every process it started (SIGKILL) and removes the hosts
// and the bridge. On failure it logs each node's log tail first.
func (c *Cluster) Close() {
	if !c.closed.CompareAndSwap(false, true) {
		return
	}
	for _, h := range c.Hosts {
		h.kill()
	}
	if c.t.Failed() {
		for _, h := range c.Hosts {
			c.t.Logf("---- node %d (%s) log, tail ----\n%s", h.ID, h.IP, tail(h.Log(), 6000))
		}
	}
	for _, h := range c.Hosts {
		h.unmountDisk()
		_ = exec.Command("ip", "netns", "del", h.NS).Run() // removes its veth end, and so the pair
		_ = exec.Command("ip", "link", "del", h.Veth).Run()
		h.removeCgroups()
	}
	_ = exec.Command("ip", "link", "del", c.bridge).Run()
}

func (c *Cluster) must(args ...string) {
	c.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		c.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// freeSubnet picks 10.a.b.0/24 from the pid and a counter, skipping
// subnets an interface of this machine already uses.
func freeSubnet(pid int, n uint32) (string, error) {
	used := map[string]bool{}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				ip := ipn.IP.To4()
				used[fmt.Sprintf("%d.%d.%d.", ip[0], ip[1], ip[2])] = true
			}
		}
	}
	for i := range 256 {
		x := (pid*7 + int(n)*13 + i) % (200 * 250)
		s := fmt.Sprintf("10.%d.%d.", 20+x/250, x%250)
		if !used[s] {
			return s, nil
		}
	}
	return "", errors.New("nethost: no free 10.x.y.0/24 subnet")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// syncBuffer is a log sink that may be read while the process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
