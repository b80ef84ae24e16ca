package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// Fault tests: three real nodes over loopback, with the harness's fault
// network and disks (package faults) between them. Every write a node
// acknowledges is recorded; after the fault heals, each must be readable
// through every node. Writes whose answer is an error may or may not have
// been applied, and are not checked.

const faultGroup = slotstore.GroupID(1)

// faultCluster starts three nodes with two groups and fault injection. The
// controller does not reconcile (no preferred-leader transfers), so leaders
// move only because of the faults a test injects.
func faultCluster(t *testing.T) *slotstoretest.Cluster {
	t.Helper()
	return slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Faults: true,
		Tune: func(cfg *cluster.Config) { cfg.ObserveInterval = -1 }})
}

// writes hands out keys of faultGroup and records the acknowledged ones.
type writes struct {
	t     *testing.T
	table func(slotstore.HashSlot) slotstore.GroupID
	mu    sync.Mutex
	next  int
	acked []string
}

// faultStart starts a fault cluster and returns it with a write recorder
// and the group's leader.
func faultStart(t *testing.T) (*slotstoretest.Cluster, *writes, slotstore.NodeID) {
	t.Helper()
	c := faultCluster(t)
	w := newWrites(t, c)
	leader := leaderOf(c.Nodes[0])
	if leader == 0 {
		t.Fatal("group has no leader")
	}
	return c, w, leader
}

func newWrites(t *testing.T, c *slotstoretest.Cluster) *writes {
	return &writes{t: t, table: c.Nodes[0].Routes().Table().Group}
}

func (w *writes) key() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		w.next++
		if k := fmt.Sprintf("%s-%d", w.t.Name(), w.next); w.table(slotstore.HashSlotOfString(k)) == faultGroup {
			return k
		}
	}
}

// put writes one fresh key through n and records it if n acknowledges it.
func (w *writes) put(n *cluster.Node, timeout time.Duration) (time.Duration, error) {
	k := w.key()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	res, _, err := n.Propose(ctx, &meta.PutKV{Key: k, Value: []byte(k)})
	took := time.Since(start)
	if err == nil && !res.OK() {
		err = res.Err()
	}
	if err == nil {
		w.mu.Lock()
		w.acked = append(w.acked, k)
		w.mu.Unlock()
	}
	return took, err
}

// mustPut retries put through n until one write is acknowledged.
func (w *writes) mustPut(n *cluster.Node, within time.Duration) time.Duration {
	w.t.Helper()
	var took time.Duration
	testutil.WaitFor(w.t, within, 20*time.Millisecond, func() (bool, string) {
		var err error
		if took, err = w.put(n, 2*time.Second); err == nil {
			return true, ""
		}
		if !slotstore.ErrorCode(err).Retryable() {
			w.t.Fatalf("write through node %d: %v", n.NodeID(), err)
		}
		return false, fmt.Sprintf("write through node %d: %v", n.NodeID(), err)
	})
	return took
}

// verify polls until every acknowledged key reads back, with its value,
// through every node — linearizably, and from each node's own replica
// (which shows that replica caught up).
func (w *writes) verify(c *slotstoretest.Cluster, within time.Duration) {
	w.t.Helper()
	w.mu.Lock()
	keys := slices.Clone(w.acked)
	w.mu.Unlock()
	deadline := time.Now().Add(within)
	for _, n := range c.Nodes {
		for _, cons := range []meta.Consistency{meta.Linearizable, meta.Local} {
			for _, k := range keys {
				testutil.WaitFor(w.t, time.Until(deadline), 20*time.Millisecond, func() (bool, string) {
					err := readKey(n, k, cons)
					return err == nil, fmt.Sprintf("acknowledged key %s through node %d (%v): %v", k, n.NodeID(), cons, err)
				})
			}
		}
	}
}

func readKey(n *cluster.Node, k string, cons meta.Consistency) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, _, err := n.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, cons)
	if err != nil {
		return err
	}
	if kv, _ := v.(*meta.KV); kv == nil || string(kv.Value) != k {
		return fmt.Errorf("read %+v", v)
	}
	return nil
}

// leaderOf is the leader of faultGroup as node n sees it (0: none).
func leaderOf(n *cluster.Node) slotstore.NodeID {
	st, _ := n.Routes().Group(faultGroup)
	return st.Leader
}

// put writes key = value through n as a client does: a retryable answer
// (a proposal that timed out on a loaded machine, a leader moving) is sent
// again, the same value, for up to 15 s; any other failure fails the test.
func put(t *testing.T, ctx context.Context, n *cluster.Node, key string, value []byte) {
	t.Helper()
	waitUntil(t, 15*time.Second, "put "+key, func() bool {
		res, _, err := n.Propose(ctx, &meta.PutKV{Key: key, Value: value})
		if err == nil && !res.OK() {
			t.Fatalf("put %s: %+v", key, res)
		}
		if err != nil && !slotstore.ErrorCode(err).Retryable() {
			t.Fatalf("put %s: %v", key, err)
		}
		return err == nil
	})
}

// waitUntil polls cond every 20ms until it holds or within has passed.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.WaitUntil(t, within, 20*time.Millisecond, what, cond)
}

// others returns the nodes other than id.
func others(c *slotstoretest.Cluster, id slotstore.NodeID) []*cluster.Node {
	var out []*cluster.Node
	for _, n := range c.Nodes {
		if n.NodeID() != id {
			out = append(out, n)
		}
	}
	return out
}

// TestFaultSlowDisk: with 30ms fsyncs on one follower writes still succeed;
// with them on the leader, writes wait on the leader's log fsync (the median
// write takes at least the delay) and none is lost.
func TestFaultSlowDisk(t *testing.T) {
	const delay = 30 * time.Millisecond
	c, w, leader := faultStart(t)
	ln := c.Nodes[leader-1]
	follower := others(c, leader)[0].NodeID()

	measure := func(what string) time.Duration {
		var took []time.Duration
		for range 15 {
			took = append(took, w.mustPut(ln, 10*time.Second))
		}
		slices.Sort(took)
		t.Logf("%s: write latency p50 %v, max %v", what, took[len(took)/2], took[len(took)-1])
		return took[len(took)/2]
	}
	measure("no delay")

	slow := c.Disk(int(follower) - 1)
	slow.SetSyncDelay(delay)
	measure("slow follower")
	if slow.DelayedSyncs() == 0 {
		t.Fatal("the follower's disk never slowed a sync")
	}
	slow.SetSyncDelay(0)

	slow = c.Disk(int(leader) - 1)
	slow.SetSyncDelay(delay)
	p50 := measure("slow leader")
	slow.SetSyncDelay(0)
	if leaderOf(ln) != leader {
		t.Logf("leadership moved during the slow-leader phase")
	} else if p50 < delay {
		t.Errorf("median write %v under a slow leader, want ≥ the %v fsync delay", p50, delay)
	}
	w.verify(c, 15*time.Second)
}
