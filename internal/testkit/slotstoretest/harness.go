// Package slotstoretest starts real slotmeta nodes in the test process: real
// dragonboat NodeHosts on 127.0.0.1 ports chosen by the OS, real Pebble
// stores under t.TempDir(), short Raft ticks. Every node is closed by
// t.Cleanup. ServeAPI serves a node's REST API for the tests that need HTTP.
package slotstoretest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/faults"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// Secret is the cluster secret of every test cluster.
const Secret = "slotstoretest-secret"

// Options shape a test cluster. Zero values take small, fast defaults.
type Options struct {
	Nodes             int           // default 1
	Groups            int           // default 4
	ReplicationFactor int           // default min(3, Nodes)
	RTT               time.Duration // default 20ms (elections in 200–400ms: stable under -race on 2 cores)
	Proposer          propose.Config
	// Tune, if set, adjusts each node's config before it starts.
	Tune func(*cluster.Config)
	// Faults routes every node's Raft and peer RPC traffic through one
	// faults.Network (Cluster.Net) and its Raft log and store through one
	// faults.Disk per node (Cluster.Disk), across Restart and Join.
	Faults bool
}

// Cluster is a set of running nodes.
type Cluster struct {
	t     testing.TB
	Nodes []*cluster.Node
	cfgs  []cluster.Config
	// Net is the cluster's fault network (Options.Faults; nil otherwise).
	// Node i (0-based) is NodeID i+1.
	Net   *faults.Network
	disks []*faults.Disk
}

// FreeAddr returns a loopback address no other test of the process got.
func FreeAddr(t testing.TB) string { return testutil.FreeAddr(t) }

// Start starts the cluster and waits until every node is ready.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Groups == 0 {
		o.Groups = 4
	}
	if o.ReplicationFactor == 0 {
		o.ReplicationFactor = min(3, o.Nodes)
	}
	if o.RTT == 0 {
		o.RTT = 20 * time.Millisecond
	}
	members := make([]controller.Node, o.Nodes)
	for i := range members {
		members[i] = controller.Node{ID: slotstore.NodeID(i + 1), RaftAddr: FreeAddr(t), PeerAddr: FreeAddr(t), APIAddr: FreeAddr(t)}
	}
	c := &Cluster{t: t}
	if o.Faults {
		c.Net = faults.NewNetwork()
	}
	for i := range members {
		cfg := cluster.Config{
			NodeID:            members[i].ID,
			DataDir:           t.TempDir(),
			RaftAddr:          members[i].RaftAddr,
			PeerAddr:          members[i].PeerAddr,
			APIAddr:           members[i].APIAddr,
			ClusterSecret:     Secret,
			InitialMembers:    members,
			GroupCount:        o.Groups,
			ReplicationFactor: o.ReplicationFactor,
			RTT:               o.RTT,
			ElectionRTT:       10,
			HeartbeatRTT:      1,
			Proposer:          o.Proposer,
			// Tests place replicas, leaders and slots themselves; one that
			// wants the balancer turns it on in Tune.
			DisableBalancer: true,
			// The disk guard runs, with a small reserve (and ballast): a
			// test that fills a disk sets its own.
			DiskReserve: 8 << 20,
		}
		if o.Tune != nil {
			o.Tune(&cfg)
		}
		c.withFaults(&cfg)
		c.cfgs = append(c.cfgs, cfg)
	}
	for i := range c.cfgs {
		n, err := cluster.Start(c.cfgs[i])
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
		c.Nodes = append(c.Nodes, n)
		t.Cleanup(func() { _ = n.Close() })
	}
	c.closeDisksFirst()
	c.WaitReady()
	return c
}

// WaitReady waits until every node is ready (30s at most).
func (c *Cluster) WaitReady() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, n := range c.Nodes {
		if n == nil {
			continue
		}
		if err := n.WaitReady(ctx); err != nil {
			c.t.Fatalf("node %d: %v\n%s", i+1, err, c.Describe())
		}
	}
}

// Describe tells what every running node sees: its readiness, its routes'
// leaders, the groups it should hold, and the controller leader's
// aggregated view of each group (membership as the replicas report it).
// Tests print it when a cluster does not become ready, so a failure that
// does not replay still says which replica lacked what.
func (c *Cluster) Describe() string {
	var b strings.Builder
	for i, n := range c.Nodes {
		if n == nil {
			fmt.Fprintf(&b, "node %d: stopped\n", i+1)
			continue
		}
		st := n.Controller()
		fmt.Fprintf(&b, "node %d: ready=%v controller leader %d, route revision %d (controller %d)\n",
			i+1, n.Ready(), n.ControllerLeader(), n.Routes().Revision(), st.RouteRevision)
		for _, id := range st.GroupIDs() {
			gs, _ := n.Routes().Group(id)
			fmt.Fprintf(&b, "  group %d: routed leader %d term %d epoch %d; desired peers %v\n",
				id, gs.Leader, gs.Term, gs.ConfigEpoch, st.Groups[id].Peers)
		}
		if n.ControllerLeader() == n.NodeID() {
			for _, id := range st.TaskIDs() {
				if t := st.Tasks[id]; t.Status != controller.TaskSucceeded && t.Status != controller.TaskCancelled {
					fmt.Fprintf(&b, "  task %d %s g%d n%d→n%d (replicas %d→%d) phase %s %s attempt %d: %s\n",
						t.ID, t.Kind, t.Group, t.From, t.To, t.OldReplicaID, t.NewReplicaID, t.Phase, t.Status, t.Attempt, t.Error)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			views, err := n.Operator().Groups(ctx)
			cancel()
			if err != nil {
				fmt.Fprintf(&b, "  groups view: %v\n", err)
			}
			for _, v := range views {
				fmt.Fprintf(&b, "  observed group %d: leader %d term %d voters %v learners %v health %s live voters %d, by node %d %d ms ago\n",
					v.ID, v.Leader, v.Term, v.Voters, v.Learners, v.Health, v.LiveVoters, v.ObservedBy, v.ObservationAgeMs)
				for _, r := range v.Replicas {
					fmt.Fprintf(&b, "    replica %+v\n", r)
				}
			}
		}
	}
	return b.String()
}

// Restart closes node i (0-based) and starts it again on the same data.
func (c *Cluster) Restart(i int) *cluster.Node {
	c.t.Helper()
	c.closeNode(i) // Nodes[i] keeps the closed node until the new one replaces it
	return c.StartNode(i)
}

func (c *Cluster) closeNode(i int) {
	c.t.Helper()
	if err := c.Nodes[i].Close(); err != nil {
		c.t.Fatalf("close node %d: %v", i+1, err)
	}
}

// Config is node i's (0-based) configuration.
func (c *Cluster) Config(i int) cluster.Config { return c.cfgs[i] }

// DataDir is node i's (0-based) data directory.
func (c *Cluster) DataDir(i int) string { return c.cfgs[i].DataDir }

// StopNode closes node i (0-based); Nodes[i] is nil until StartNode.
func (c *Cluster) StopNode(i int) {
	c.t.Helper()
	c.closeNode(i)
	c.Nodes[i] = nil
}

// TryStartNode starts node i (0-based) again on its data and returns what
// cluster.Start returned (a node the cluster refuses fails here); it waits
// for nothing.
func (c *Cluster) TryStartNode(i int) (*cluster.Node, error) {
	c.t.Helper()
	n, err := cluster.Start(c.cfgs[i])
	if err == nil {
		c.Nodes[i] = n
		c.t.Cleanup(func() { _ = n.Close() })
	}
	return n, err
}

// StartNode starts node i (0-based) again on its data and waits until every
// node is ready.
func (c *Cluster) StartNode(i int) *cluster.Node {
	c.t.Helper()
	n, err := cluster.Start(c.cfgs[i])
	if err != nil {
		c.t.Fatalf("restart node %d: %v", i+1, err)
	}
	c.Nodes[i] = n
	c.t.Cleanup(func() { _ = n.Close() })
	c.WaitReady()
	return n
}

// Retune changes node i's (0-based) configuration for its next start: a
// node started again on another binary, say (cluster.Config.Version).
func (c *Cluster) Retune(i int, tune func(*cluster.Config)) { tune(&c.cfgs[i]) }

// Join starts one more node that joins the running cluster through the API
// address via (a node's HTTP API must be served there), and waits until it
// is ready. The node keeps the cluster's options.
func (c *Cluster) Join(via string) *cluster.Node {
	c.t.Helper()
	base := c.cfgs[0]
	id := slotstore.NodeID(len(c.cfgs) + 1)
	cfg := base
	cfg.NodeID = id
	cfg.DataDir = c.t.TempDir()
	cfg.RaftAddr, cfg.PeerAddr, cfg.APIAddr = FreeAddr(c.t), FreeAddr(c.t), FreeAddr(c.t)
	cfg.InitialMembers = nil
	cfg.JoinAddr = via
	cfg.Registerer = nil
	c.withFaults(&cfg)
	n, err := cluster.Start(cfg)
	if err != nil {
		c.t.Fatalf("join node %d: %v", id, err)
	}
	c.t.Cleanup(func() { _ = n.Close() })
	c.Nodes = append(c.Nodes, n)
	c.cfgs = append(c.cfgs, cfg)
	c.closeDisksFirst()
	c.WaitReady()
	return n
}

// Disk is the fault disk of node i (0-based; Options.Faults, else nil).
func (c *Cluster) Disk(i int) *faults.Disk {
	if i < 0 || i >= len(c.disks) {
		return nil
	}
	return c.disks[i]
}

// withFaults wires cfg's node into the cluster's fault network and gives it
// its own disk. The hooks stay in c.cfgs, so Restart keeps them.
func (c *Cluster) withFaults(cfg *cluster.Config) {
	if c.Net == nil {
		return
	}
	d := faults.NewDisk()
	c.disks = append(c.disks, d)
	c.Net.Register(cfg.NodeID, cfg.RaftAddr, cfg.PeerAddr)
	cfg.RaftTransport = c.Net.RaftTransport(cfg.NodeID)
	cfg.WrapPeerTransport = c.Net.PeerTransport(cfg.NodeID)
	cfg.RaftFS = d.RaftFS()
	cfg.Store.FS = d.StoreFS()
}

// closeDisksFirst makes the disks drop their delays before the nodes
// started so far close (cleanups run last-registered first), so no Close
// waits out a slow fsync.
func (c *Cluster) closeDisksFirst() {
	if c.Net == nil {
		return
	}
	disks := c.disks
	c.t.Cleanup(func() {
		for _, d := range disks {
			d.Close()
		}
	})
}
