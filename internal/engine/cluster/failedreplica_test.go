package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
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

// TestAReplicaThatCannotStartDoesNotTakeItsNodeDown (issue 51): a node
// whose replica of a group the engine panics on as it loads it (its Raft
// state damaged: a commit index past its log) starts all the same, serves
// its other group and forwards writes, and reports the replica failed with
// the engine's reason — in its status, its readiness, the controller
// leader's view of the group and a metric — without trying it again.
// Moving the replica to another node rebuilds it there and removes what it
// left — an operator's move, or the balancer's — moved back, it is a new
// replica from a snapshot, and the node is ready and restarts cleanly.
func TestAReplicaThatCannotStartDoesNotTakeItsNodeDown(t *testing.T) {
	t.Run("rebuilt by an operator", func(t *testing.T) { failAReplica(t, false) })
	t.Run("rebuilt by the balancer", func(t *testing.T) { failAReplica(t, true) })
}

func failAReplica(t *testing.T, balancer bool) {
	rc := startRebuilds(t, balancer, nil)
	c, logs := rc.Cluster, rc.logs
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &restarts{t: t, c: c, ctx: ctx}
	pause := func(paused bool) { rc.pause(ctx, paused) }
	if balancer {
		pause(true) // until the failure was seen everywhere
	}
	r.put("before", 20)

	// The victim holds replicas of both groups and does not lead group 1.
	const g, other = slotstore.GroupID(1), slotstore.GroupID(2)
	st := c.Nodes[0].Controller()
	leader, _, free := roles(t, c, g)
	var victim slotstore.NodeID
	for node := range st.Groups[g].Peers {
		if _, both := st.Groups[other].Peers[node]; both && node != leader && (victim == 0 || node < victim) {
			victim = node
		}
	}
	if victim == 0 {
		t.Fatalf("no follower of group %d also holds group %d: %v, %v", g, other, st.Groups[g].Peers, st.Groups[other].Peers)
	}
	vi := int(victim) - 1
	replica := st.Groups[g].Peers[victim]
	commit, err := c.Nodes[vi].Testing().DamageReplicaState(g)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("n%d's replica %d of group %d: commit index %d saved past its log", victim, replica, g, commit)
	c.StopNode(vi)
	n, err := c.TryStartNode(vi)
	if err != nil {
		t.Fatalf("the node did not start: %v", err)
	}

	const why = "out of range state"
	failure := func(n *cluster.Node) (slotstore.ReplicaFailure, bool) {
		i := slices.IndexFunc(n.LocalStatus(ctx).Failed, func(rf slotstore.ReplicaFailure) bool { return rf.Group == g })
		if i < 0 {
			return slotstore.ReplicaFailure{}, false
		}
		return n.LocalStatus(ctx).Failed[i], true
	}
	waitUntil(t, 30*time.Second, "the node to report its replica failed", func() bool {
		rf, ok := failure(n)
		return ok && rf.ReplicaID == replica && rf.Panicked && strings.Contains(rf.Reason, why)
	})
	// It serves its other group, and writes through it reach group 1.
	waitUntil(t, 30*time.Second, fmt.Sprintf("n%d to serve group %d", victim, other), func() bool {
		return readsLocally(ctx, n, r.written, other)
	})
	r.putVia(n, "failed", 20)
	if err := n.Ready(); err == nil || !strings.Contains(err.Error(), "failed to start") || !strings.Contains(err.Error(), why) {
		t.Fatalf("readiness with a failed replica: %v", err)
	}
	// The controller leader's view of the group says so.
	testutil.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() (bool, string) {
		v, err := c.Nodes[0].Operator().Group(ctx, g)
		if err != nil {
			return false, err.Error()
		}
		i := slices.IndexFunc(v.Replicas, func(rv slotstore.ReplicaView) bool { return rv.Node == victim })
		return i >= 0 && v.Replicas[i].ReplicaID == replica && strings.Contains(v.Replicas[i].Failed, why),
			fmt.Sprintf("the group's view does not show the failed replica: %+v", v.Replicas)
	})
	if v := gaugeOf(t, rc.reg(victim), "slotmeta_replica_failed", map[string]string{"group": "1", "replica": fmt.Sprint(replica)}); v != 1 {
		t.Fatalf("slotmeta_replica_failed{group=1,replica=%d} = %v", replica, v)
	}
	// Not tried again (the engine panicked on it), and said on one line.
	if rf, _ := failure(n); rf.Attempts != 1 {
		t.Fatalf("the failed replica was tried %d times", rf.Attempts)
	}
	if line := lineWith(logs.String(), "group replica failed to start"); !strings.Contains(line, why) {
		t.Fatalf("the failure's log line lacks the engine's reason: %q", line)
	}

	// Rebuilt: moved to another node (its data here removed), then back.
	if balancer {
		pause(false)
		waitUntil(t, 30*time.Second, fmt.Sprintf("the balancer to move group %d's replica off n%d", g, victim), func() bool {
			_, still := c.Nodes[0].Controller().Groups[g].Peers[victim]
			return !still
		})
		if d := decisionsOf(c.Nodes[0], g, "replica_failed"); len(d) == 0 {
			t.Fatalf("no balancer decision names the failed replica")
		}
	} else {
		moveReplica(ctx, t, c.Nodes[0], g, victim, free)
	}
	waitUntil(t, 30*time.Second, "the failure gone with the replica's data", func() bool {
		_, failed := failure(n)
		k, err := n.Testing().KeyCount(g, nil)
		return !failed && err == nil && k == 0
	})
	moveReplica(ctx, t, c.Nodes[0], g, free, victim)
	r.put("rebuilt", 20)
	r.agree("after the rebuild")
	if err := n.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	r.restart(victim)
	r.put("restarted", 10)
	r.agree("after a restart of the rebuilt replica's node")
}

// rebuilds is a cluster of nodes (four unless said) and two groups of
// three replicas whose balancer (when on) only rebuilds replicas; it keeps each node's
// metrics registry, and shows the nodes' logs when the test fails.
type rebuilds struct {
	*slotstoretest.Cluster
	t    *testing.T
	logs *syncLog
	mu   sync.Mutex
	regs map[slotstore.NodeID]*prometheus.Registry
}

func startRebuilds(t *testing.T, balancer bool, tune func(*cluster.Config), nodes ...int) *rebuilds {
	n := 4
	if len(nodes) > 0 {
		n = nodes[0]
	}
	rc := &rebuilds{t: t, logs: &syncLog{}, regs: map[slotstore.NodeID]*prometheus.Registry{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs:\n%s", rc.logs.String())
		}
	})
	rc.Cluster = slotstoretest.Start(t, slotstoretest.Options{Nodes: n, Groups: 2, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.TaskPhaseTimeout = 10 * time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(rc.logs, nil)).With("node", cfg.NodeID)
		reg := prometheus.NewRegistry()
		rc.mu.Lock()
		rc.regs[cfg.NodeID] = reg
		rc.mu.Unlock()
		cfg.Registerer = reg
		if balancer {
			cfg.DisableBalancer, cfg.BalanceInterval = false, 200*time.Millisecond
			cfg.Balancer.GroupsPerNode, cfg.Balancer.LeaderSkew = -1, 100 // only the rebuild moves
		}
		if tune != nil {
			tune(cfg)
		}
	}})
	return rc
}

// reg is node id's metrics registry.
func (rc *rebuilds) reg(id slotstore.NodeID) *prometheus.Registry {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.regs[id]
}

// pause pauses or resumes the balancer.
func (rc *rebuilds) pause(ctx context.Context, paused bool) {
	rc.t.Helper()
	if err := rc.Nodes[0].Operator().SetBalancer(ctx, slotstore.BalancerChange{Paused: &paused}); err != nil {
		rc.t.Fatal(err)
	}
}

// readsLocally reports whether node n reads every written key of group g
// from its own replica.
func readsLocally(ctx context.Context, n *cluster.Node, keys []string, g slotstore.GroupID) bool {
	tbl := n.Routes().Table()
	seen := 0
	for _, key := range keys {
		hs := slotstore.HashSlotOfString(key)
		if tbl.Group(hs) != g {
			continue
		}
		v, info, err := n.Read(ctx, &meta.GetKV{HashSlot: hs, Key: key}, meta.Local)
		if kv, _ := v.(*meta.KV); err != nil || kv == nil || info.ServedBy != n.NodeID() {
			return false
		}
		seen++
	}
	return seen > 0
}

// gaugeOf is the value of the gauge name with exactly labels in reg (-1:
// absent).
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// lineWith returns the first line of s that contains sub ("" if none).
func lineWith(s, sub string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}

// decisionsOf returns the decisions the node's controller state keeps
// about group g with reason.
func decisionsOf(n *cluster.Node, g slotstore.GroupID, reason slotstore.Reason) []slotstore.Decision {
	var out []slotstore.Decision
	for _, d := range n.Operator().Decisions() {
		if d.Group == g && d.Reason == reason {
			out = append(out, d)
		}
	}
	return out
}
