package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/nethost"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// hostCluster is a cluster of slotmeta processes on network-namespace hosts
// (package nethost), as the workload clients see it: the nodes' API URLs on
// their own addresses, and requests that carry the cluster's admin token.
type hostCluster struct {
	t      *testing.T
	c      *nethost.Cluster
	client *http.Client
}

func (hc *hostCluster) size() int                    { return len(hc.c.Hosts) }
func (hc *hostCluster) url(i int) string             { return hc.c.Hosts[i].API() }
func (hc *hostCluster) anyURL(rng *rand.Rand) string { return hc.url(rng.Intn(hc.size())) }
func (hc *hostCluster) do(base string, r request) answer {
	return exchange(hc.t, hc.client, base, r, hc.c.Token())
}

var serverBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// TestMain removes the server binary slotmetaBin built (70 MB in the
// temporary directory per run, left behind before).
func TestMain(m *testing.M) {
	code := m.Run()
	if serverBin.dir != "" {
		os.RemoveAll(serverBin.dir)
	}
	os.Exit(code)
}

// slotmetaBin builds the server binary once per test process (with the race
// detector when the tests run with it, so the build reuses what `go test
// -race` compiled).
func slotmetaBin(t *testing.T) string {
	t.Helper()
	serverBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "slotmeta-chaos-bin-")
		if err != nil {
			serverBin.err = err
			return
		}
		serverBin.dir, serverBin.path = dir, filepath.Join(dir, "slotmeta")
		args := []string{"build", "-o", serverBin.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/slotmeta/slotmeta/cmd/server")...).CombinedOutput()
		if err != nil {
			serverBin.err = fmt.Errorf("build the server: %v\n%s", err, out)
		}
	})
	if serverBin.err != nil {
		t.Fatal(serverBin.err)
	}
	return serverBin.path
}

// startHosts starts a 3-node cluster on namespace hosts (skipping the test
// where namespaces cannot be made) with the default Raft timing (50 ms
// ticks, 500 ms election timeout) and the given extra flags.
func startHosts(t *testing.T, args ...string) *hostCluster {
	t.Helper()
	return startHostsWith(t, nethost.Options{Args: args})
}

// startHostsWith is startHosts with more of nethost's options (o.Args are
// the node flags; Bin and Nodes are set here).
func startHostsWith(t *testing.T, o nethost.Options) *hostCluster {
	t.Helper()
	if err := nethost.Available(); err != nil {
		t.Skip(err)
	}
	// CHAOS_NODE_ARGS adds node flags to a run (an experiment's timing,
	// e.g. "--rtt 100ms --election-rtt 5").
	args := append(o.Args, strings.Fields(os.Getenv("CHAOS_NODE_ARGS"))...)
	o.Bin, o.Nodes, o.Args = slotmetaBin(t), 3, append([]string{"--log-level", "warn"}, args...)
	c := nethost.Start(t, o)
	hc := &hostCluster{t: t, c: c, client: &http.Client{Timeout: 5 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true}}}
	t.Cleanup(hc.client.CloseIdleConnections)
	return hc
}

// get decodes a GET answer of node i (retrying for a few seconds: during a
// fault the node asked may not know the controller leader yet).
func getJSON[T any](hc *hostCluster, i int, path string) (T, error) {
	var out T
	var last answer
	if _, ok := testutil.Eventually(5*time.Second, 50*time.Millisecond, func() (bool, string) {
		last = hc.do(hc.url(i), request{method: "GET", path: path})
		return last.code == http.StatusOK, ""
	}); ok {
		return out, json.Unmarshal(last.body, &out)
	}
	return out, fmt.Errorf("GET %s via node %d: %d %s", path, i+1, last.code, last.body)
}

// groupLeader is group g's leader as node i's routes show it (0: none).
func (hc *hostCluster) groupLeader(i int, g slotstore.GroupID) slotstore.NodeID {
	a := hc.do(hc.url(i), request{method: "GET", path: "/v1/cluster/routes"})
	var r struct {
		HashSlots []struct {
			Group      slotstore.GroupID `json:"group"`
			LeaderNode slotstore.NodeID  `json:"leader_node"`
		} `json:"hash_slots"`
	}
	if a.code != http.StatusOK || json.Unmarshal(a.body, &r) != nil {
		return 0
	}
	for _, row := range r.HashSlots {
		if row.Group == g {
			return row.LeaderNode
		}
	}
	return 0
}

// ctrlLeader is the controller leader as node i sees it (0: unknown).
func (hc *hostCluster) ctrlLeader(i int) slotstore.NodeID {
	a := hc.do(hc.url(i), request{method: "GET", path: "/v1/cluster"})
	var s slotstore.ClusterSummary
	if a.code != http.StatusOK || json.Unmarshal(a.body, &s) != nil {
		return 0
	}
	return s.ControllerLeader
}

// agreedLeader waits until every running node but skip names the same
// leader of group g, and returns it.
// waitLeads waits until every running node agrees that node leads group 1
// and the controller leader has observed it so (its view of the group, on
// which the reconciler acts).
func (hc *hostCluster) waitLeads(node slotstore.NodeID, within time.Duration) {
	hc.t.Helper()
	testutil.WaitFor(hc.t, within, 50*time.Millisecond, func() (bool, string) {
		if l := hc.agreedLeader(1, 0, within); l != node {
			return false, fmt.Sprintf("group 1 is led by n%d, not n%d", l, node)
		}
		a := hc.do(hc.url(0), request{method: "GET", path: "/v1/cluster/groups/1"})
		var v struct {
			Leader slotstore.NodeID `json:"leader"`
		}
		if a.code != 200 || json.Unmarshal(a.body, &v) != nil || v.Leader != node {
			return false, fmt.Sprintf("the controller leader observes group 1 led by n%d, not n%d (%d %s)", v.Leader, node, a.code, a.body)
		}
		return true, ""
	})
}

func (hc *hostCluster) agreedLeader(g slotstore.GroupID, skip slotstore.NodeID, within time.Duration) slotstore.NodeID {
	hc.t.Helper()
	var seen slotstore.NodeID
	testutil.WaitFor(hc.t, within, 50*time.Millisecond, func() (bool, string) {
		seen = 0
		for i, h := range hc.c.Hosts {
			if slotstore.NodeID(h.ID) == skip || !h.Running() {
				continue
			}
			l := hc.groupLeader(i, g)
			if l == 0 || (seen != 0 && l != seen) {
				return false, fmt.Sprintf("the nodes did not agree on a leader of group %d: n%d names %d (0: none), a node before it %d", g, h.ID, l, seen)
			}
			seen = l
		}
		return seen != 0, fmt.Sprintf("the nodes did not agree on a leader of group %d: no running node to ask", g)
	})
	return seen
}
