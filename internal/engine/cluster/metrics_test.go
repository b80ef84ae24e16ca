package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestStoreMetrics: a node exports its store's memory (block cache,
// memtables) and disk use, and stops collecting them when it closes.
func TestStoreMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 1,
		Tune: func(cfg *cluster.Config) { cfg.Registerer = reg }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := c.Nodes[0].Propose(ctx, &meta.PutKV{Key: "m", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	values := func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if g := m.GetGauge(); g != nil {
					out[mf.GetName()] += g.GetValue()
				}
				if c := m.GetCounter(); c != nil {
					out[mf.GetName()] += c.GetValue()
				}
			}
		}
		return out
	}
	got := values()
	for _, name := range []string{"slotmeta_store_block_cache_bytes", "slotmeta_store_memtable_bytes", "slotmeta_store_file_cache_bytes", "slotmeta_store_disk_bytes", "slotmeta_raft_disk_bytes", "slotmeta_data_dir_disk_bytes"} {
		if _, ok := got[name]; !ok {
			t.Fatalf("%s missing from %v", name, got)
		}
	}
	if got["slotmeta_store_memtable_bytes"] <= 0 || got["slotmeta_store_disk_bytes"] <= 0 {
		t.Fatalf("memtables %v, disk %v", got["slotmeta_store_memtable_bytes"], got["slotmeta_store_disk_bytes"])
	}
	// What the disk holds, preallocated WALs included (the store says a
	// few KB where the directory held 22.6 MB: issue 30).
	if raft, whole := got["slotmeta_raft_disk_bytes"], got["slotmeta_data_dir_disk_bytes"]; raft < 1<<20 || whole < raft+got["slotmeta_store_disk_bytes"] {
		t.Fatalf("raft disk bytes %v, data directory %v", raft, whole)
	}
	// What every node says of the controller state and its own replicas:
	// the leaders it saw elected (the controller's and the group's), the
	// route revision, the controller's applied index, no pins, no pause.
	for name, atLeast := range map[string]float64{"slotmeta_leader_changes_total": 2, "slotmeta_route_revision": 1, "slotmeta_controller_applied_index": 1} {
		if got[name] < atLeast {
			t.Fatalf("%s = %v, want at least %v", name, got[name], atLeast)
		}
	}
	if _, ok := got["slotmeta_decisions_recorded_total"]; !ok {
		t.Fatal("slotmeta_decisions_recorded_total missing")
	}
	for _, name := range []string{"slotmeta_balancer_pinned_groups", "slotmeta_balancer_paused", "slotmeta_snapshots_total"} {
		if v, ok := got[name]; !ok || v != 0 {
			t.Fatalf("%s = %v (%v), want 0", name, v, ok)
		}
	}
	if err := c.Nodes[0].Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := values()["slotmeta_store_memtable_bytes"]; ok {
		t.Fatal("a closed node still reports its store")
	}
}

// TestEveryNodeReportsItsReplicas: each node exports, about itself, whether
// each of its replicas knows a leader, leads, its term and log index; with
// two of three nodes gone, the survivor says its replicas know no leader —
// the series an alert on a leaderless group reads when the controller
// leader's own view is gone with its quorum.
func TestEveryNodeReportsItsReplicas(t *testing.T) {
	regs := map[slotstore.NodeID]*prometheus.Registry{}
	var mu sync.Mutex
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1,
		Tune: func(cfg *cluster.Config) {
			mu.Lock()
			defer mu.Unlock()
			r := prometheus.NewRegistry()
			regs[cfg.NodeID] = r
			cfg.Registerer = r
		}})
	gauge := func(reg *prometheus.Registry, name, group string) (float64, bool) {
		v, ok := series(t, reg, name)["group="+group]
		return v, ok
	}
	leaders := 0.0
	for id, reg := range regs {
		for _, g := range []string{"1", "controller"} {
			if v, ok := gauge(reg, "slotmeta_replica_has_leader", g); !ok || v != 1 {
				t.Fatalf("node %d group %s: has_leader %v %v", id, g, v, ok)
			}
			if v, _ := gauge(reg, "slotmeta_replica_term", g); v < 1 {
				t.Fatalf("node %d group %s: term %v", id, g, v)
			}
			// Each replica saw the founding election (term 0 → 1 at least).
			if v, _ := gauge(reg, "slotmeta_elections_total", g); v < 1 {
				t.Fatalf("node %d group %s: elections %v", id, g, v)
			}
		}
		v, _ := gauge(reg, "slotmeta_replica_is_leader", "1")
		leaders += v
	}
	if leaders != 1 {
		t.Fatalf("%v nodes say they lead group 1", leaders)
	}
	// Writes through a node that does not lead group 1 are forwarded: it
	// times its forward hops and peer calls, every replica its Raft log's
	// saves and its applies, and each node says its Raft connections are open.
	var via *cluster.Node
	for _, n := range c.Nodes {
		if v, _ := gauge(regs[n.NodeID()], "slotmeta_replica_is_leader", "1"); v == 0 {
			via = n
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 20 {
		if res, _, err := via.Propose(ctx, &meta.PutKV{Key: fmt.Sprintf("lat-%d", i), Value: []byte("v")}); err != nil || !res.OK() {
			t.Fatalf("put: %v %+v", err, res)
		}
	}
	reg := regs[via.NodeID()]
	if n := series(t, reg, "slotmeta_forward_seconds")["outcome=ok"]; n < 1 {
		t.Fatalf("forward hops timed: %v", n)
	}
	if calls := series(t, reg, "slotmeta_peer_request_seconds"); len(calls) == 0 {
		t.Fatal("no peer call timed")
	}
	for id, r := range regs {
		// The commit index reaches what the replica applied (dragonboat may
		// apply an update's committed entries while its state is saved).
		testutil.WaitUntil(t, 5*time.Second, 10*time.Millisecond, "group 1's commit index reaches its applied index", func() bool {
			applied, _ := gauge(r, "slotmeta_group_applied_index", "1")
			commit, ok := gauge(r, "slotmeta_replica_commit_index", "1")
			return ok && commit >= applied && commit >= 1
		})
		if epoch, _ := gauge(r, "slotmeta_group_config_epoch", "1"); epoch < 1 {
			t.Fatalf("node %d: group 1's config epoch %v", id, epoch)
		}
		if n := series(t, r, "slotmeta_raft_log_save_seconds")[""]; n < 1 {
			t.Fatalf("node %d: Raft log saves timed: %v", id, n)
		}
		testutil.WaitUntil(t, 5*time.Second, 10*time.Millisecond, "every node applied the writes", func() bool {
			return series(t, r, "slotmeta_apply_seconds")[""] >= 1
		})
		// A node connects to those it sends to (a follower of every group
		// sends only to their leaders): each it tried is open.
		up := series(t, r, "slotmeta_raft_peer_connected")
		if len(up) == 0 || up["node=1"]+up["node=2"]+up["node=3"] != float64(len(up)) {
			t.Fatalf("node %d: Raft connections %v, want every one it opened open", id, up)
		}
	}
	survivor := c.Nodes[0]
	for _, n := range c.Nodes[1:] {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitUntil(t, 30*time.Second, 50*time.Millisecond, "the survivor says group 1 has no leader", func() bool {
		v, ok := gauge(regs[survivor.NodeID()], "slotmeta_replica_has_leader", "1")
		return ok && v == 0
	})
	testutil.WaitUntil(t, 30*time.Second, 50*time.Millisecond, "the survivor says it cannot connect to the others", func() bool {
		up := series(t, regs[survivor.NodeID()], "slotmeta_raft_peer_connected")
		fails := series(t, regs[survivor.NodeID()], "slotmeta_raft_peer_connection_failures_total")
		return len(up) == 2 && up["node=2"]+up["node=3"] == 0 && fails["node=2"] > 0 && fails["node=3"] > 0
	})
}

// series reads the gauges, counters or histograms' counts of a family, keyed by their labels
// ("name=value,…" in order).
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var key []string
			for _, l := range m.GetLabel() {
				key = append(key, l.GetName()+"="+l.GetValue())
			}
			// A histogram reads as its count.
			out[strings.Join(key, ",")] = m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}
