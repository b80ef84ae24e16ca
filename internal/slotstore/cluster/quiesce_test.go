package cluster_test

import (
	"testing"
	"time"

	"slotmeta/internal/slotstore/cluster"
	"slotmeta/internal/slotstore/slotstoretest"
)

// TestQuiescedGroupWakesWhenItsLeaderIsCutOff: with Config.Quiesce, an idle
// group stops exchanging heartbeats (its leader hears nothing from its
// followers for seconds); when the leader's node is then cut off, a write
// through the majority finds no reachable leader, wakes the group (and the
// controller leader wakes it too, once it sees the node unreachable), the
// followers elect a new leader and the write is acknowledged; every
// acknowledged write reads back after the heal.
func TestQuiescedGroupWakesWhenItsLeaderIsCutOff(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Faults: true, Tune: func(cfg *cluster.Config) {
		cfg.Quiesce = true
		cfg.ObserveInterval = 100 * time.Millisecond
	}})
	w := newWrites(t, c)
	w.mustPut(c.Nodes[0], 5*time.Second)
	// The reconciler first moves the leader to the preferred one.
	preferred := c.Nodes[0].Controller().Groups[faultGroup].PreferredLeader
	waitUntil(t, 10*time.Second, "the preferred leader leads", func() bool { return leaderOf(c.Nodes[0]) == preferred })
	leader := preferred
	follower := others(c, leader)[0].NodeID()
	// Quiesced: no Raft message from the follower's replica for well over
	// a heartbeat interval (20 ms here) — dragonboat quiesces a group after
	// ten election timeouts (4 s) without traffic.
	waitUntil(t, 15*time.Second, "the group quiesces", func() bool {
		return c.Nodes[leader-1].HeardAgoMs(faultGroup, follower) > 1000
	})
	for _, n := range c.Nodes {
		if l := leaderOf(n); l != leader {
			t.Fatalf("node %d sees node %d leading group 1 while quiesced, not %d", n.NodeID(), l, leader)
		}
	}

	c.Net.Isolate(leader)
	start := time.Now()
	majority := others(c, leader)
	took := w.mustPut(majority[0], 15*time.Second)
	waited := time.Since(start)
	t.Logf("first write after the quiesced leader was cut off: acknowledged %v after the cut (the last try took %v)", waited.Round(time.Millisecond), took.Round(time.Millisecond))
	if waited > 10*time.Second {
		t.Fatalf("the quiesced group took %v to take a write again", waited)
	}
	if l := leaderOf(majority[0]); l == leader || l == 0 {
		t.Fatalf("group 1 led by %d after the cut of node %d", l, leader)
	}
	c.Net.Heal()
	w.mustPut(majority[1], 5*time.Second)
	w.verify(c, 15*time.Second)
}
