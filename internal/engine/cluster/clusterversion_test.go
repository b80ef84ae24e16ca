package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestTheClusterVersionGatesNewFeaturesUntilEveryNodeRunsThem (issue 47):
// while one node runs the previous release (it reports 0.1) the cluster
// stays at 0.1 and the features of 0.2 are refused with an error naming
// them and both versions — a state check, a rebuild in place — and a
// joining node that says it runs 0.1 is admitted. Once that node runs 0.2
// too, the controller leader records 0.2 (a decision says so), every node
// keeps it in its data directory, the features work, and a node that says
// it runs 0.1 may no longer join. A data directory of a newer cluster
// version is refused at start with both versions named, nothing written.
func TestTheClusterVersionGatesNewFeaturesUntilEveryNodeRunsThem(t *testing.T) {
	base, binary := clusterversion.Base, clusterversion.Binary
	reg := prometheus.NewRegistry() // node 1's
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		if cfg.NodeID == 1 {
			cfg.Registerer = reg
		}
		if cfg.NodeID == 3 {
			cfg.Version = base
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	via := c.Nodes[0]
	reported := func(n *cluster.Node, want map[slotstore.NodeID]slotstore.Version) bool {
		hs, err := n.Operator().NodeHealth(ctx)
		if err != nil || len(hs) != len(want) {
			return false
		}
		for _, h := range hs {
			if h.ReportAgeMs < 0 || h.Version != want[h.Node] {
				return false
			}
		}
		return true
	}
	waitUntil(t, 20*time.Second, "every node's version reported", func() bool {
		return reported(via, map[slotstore.NodeID]slotstore.Version{1: binary, 2: binary, 3: base})
	})
	for _, n := range c.Nodes {
		if s := n.Operator().Summary(); s.ClusterVersion != base || s.Version != map[slotstore.NodeID]slotstore.Version{1: binary, 2: binary, 3: base}[n.NodeID()] {
			t.Fatalf("node %d's summary while mixed: cluster %s, runs %s", n.NodeID(), s.ClusterVersion, s.Version)
		}
	}
	metric := func() map[string]float64 { return series(t, reg, "slotmeta_cluster_version_info") }
	if m := metric(); m["cluster_version=0.1,version=0.2"] != 1 || len(m) != 1 {
		t.Fatalf("node 1's slotmeta_cluster_version_info while mixed: %v", m)
	}
	gated := func(what string, err error) {
		t.Helper()
		if slotstore.ErrorCode(err) != slotstore.CodeFailedPrecondition || !strings.Contains(err.Error(), "state checks need cluster version 0.2; the cluster is at 0.1") {
			t.Fatalf("%s while a node runs 0.1: %v", what, err)
		}
	}
	_, err := via.Operator().Recovery().CheckGroup(ctx, 1)
	gated("a state check", err)
	_, err = c.Nodes[2].Operator().Recovery().CheckGroup(ctx, 1) // through a node that is not the controller leader, maybe
	gated("a state check through node 3", err)
	peer := slices.Sorted(func(yield func(slotstore.NodeID) bool) {
		for n := range via.Controller().Groups[1].Peers {
			yield(n)
		}
	})[0]
	_, err = via.Operator().CreateReplicaMove(ctx, 1, peer, peer)
	gated("a rebuild in place", err)
	for _, d := range via.Operator().Decisions() {
		if d.Kind == slotstore.DecisionClusterVersion {
			t.Fatalf("a cluster version decision while mixed: %+v", d)
		}
	}
	if v, err := os.ReadFile(filepath.Join(c.DataDir(0), cluster.MinVersionFile)); err == nil {
		t.Fatalf("node 1 recorded a cluster version while mixed: %s", v)
	}

	// Node 3 starts on the new binary: the upgrade's last step.
	c.StopNode(2)
	c.Retune(2, func(cfg *cluster.Config) { cfg.Version = binary })
	c.StartNode(2)
	waitUntil(t, 20*time.Second, "cluster version 0.2 on every node", func() bool {
		for _, n := range c.Nodes {
			if n.Operator().Summary().ClusterVersion != binary {
				return false
			}
		}
		return true
	})
	waitUntil(t, 10*time.Second, "every data directory to keep 0.2", func() bool {
		for i := range c.Nodes {
			b, err := os.ReadFile(filepath.Join(c.DataDir(i), cluster.MinVersionFile))
			if err != nil || strings.TrimSpace(string(b)) != binary.String() {
				return false
			}
		}
		return true
	})
	if !slices.ContainsFunc(via.Operator().Decisions(), func(d slotstore.Decision) bool {
		return d.Kind == slotstore.DecisionClusterVersion && strings.Contains(string(d.Reason), "cluster version 0.2 recorded (was 0.1)")
	}) {
		t.Fatalf("no decision records the cluster version: %+v", via.Operator().Decisions())
	}
	if m := metric(); m["cluster_version=0.2,version=0.2"] != 1 || len(m) != 1 {
		t.Fatalf("node 1's slotmeta_cluster_version_info after the upgrade: %v", m)
	}
	checkAll(t, ctx, c.Nodes[2], "after the upgrade")
	// The controller's replicas agree: at one applied index, every node's
	// copy hashes alike (node 3 restarted and replayed its log).
	waitUntil(t, 10*time.Second, "every node's copy of the controller at one index", func() bool {
		sums := map[uint64]map[string]bool{}
		for _, n := range c.Nodes {
			s := n.Operator().Summary()
			if sums[s.ControllerApplied] == nil {
				sums[s.ControllerApplied] = map[string]bool{}
			}
			sums[s.ControllerApplied][s.ControllerDigest] = true
		}
		for idx, ds := range sums {
			if len(ds) > 1 {
				t.Fatalf("the controller's copies differ at index %d: %v", idx, ds)
			}
		}
		return len(sums) == 1
	})

	// A node of the previous release may not join any more; one of this
	// release may.
	info := slotstore.NodeInfo{ID: 9, RaftAddr: slotstoretest.FreeAddr(t)}
	if _, err := via.RegisterNode(ctx, info, base); slotstore.ErrorCode(err) != slotstore.CodeFailedPrecondition ||
		!strings.Contains(err.Error(), "the node runs 0.1, older than the cluster version 0.2") {
		t.Fatalf("a 0.1 node's registration in a 0.2 cluster: %v", err)
	}
	if _, ok := via.Controller().Nodes[9]; ok {
		t.Fatal("the refused node was recorded")
	}

	// A data directory a newer cluster version wrote: refused at start,
	// before anything is written.
	c.StopNode(1)
	newer := slotstore.Version{Major: binary.Major, Minor: binary.Minor + 1}
	if err := os.WriteFile(filepath.Join(c.DataDir(1), cluster.MinVersionFile), []byte(newer.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := tree(t, c.DataDir(1))
	_, err = c.TryStartNode(1)
	if err == nil || !strings.Contains(err.Error(), "written by a cluster at version "+newer.String()) || !strings.Contains(err.Error(), "this binary runs "+binary.String()) {
		t.Fatalf("a start on a newer cluster's data: %v", err)
	}
	if after := tree(t, c.DataDir(1)); after != before {
		t.Fatalf("the refused start wrote to the data directory:\nbefore %s\nafter  %s", before, after)
	}
}

// tree lists every file under dir with its size and modification time.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s\n", p, info.Size(), info.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
