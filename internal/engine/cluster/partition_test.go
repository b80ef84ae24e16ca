package cluster_test

import (
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestFaultPartitionIsolatedLeader: the majority elects a new leader and
// keeps accepting writes while the old leader is cut off; writes sent to the
// isolated node fail with an explicit, retryable error; after the network
// heals the old leader catches up and every acknowledged write reads back
// through every node.
func TestFaultPartitionIsolatedLeader(t *testing.T) {
	c, w, old := faultStart(t)
	isolated := c.Nodes[old-1]
	majority := others(c, old)
	for range 3 {
		w.mustPut(isolated, 5*time.Second)
	}

	c.Net.Isolate(old)
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var isolatedTries, isolatedAcked int
	refusals := map[slotstore.Code]int{}
	bg.Add(1)
	go func() { // writes to the isolated node, while the majority writes (3 at least)
		defer bg.Done()
		for isolatedTries < 3 || !closed(stop) {
			_, err := w.put(isolated, 500*time.Millisecond)
			isolatedTries++
			switch {
			case err == nil:
				isolatedAcked++
			case !slotstore.ErrorCode(err).Retryable():
				t.Errorf("write to the isolated node: %v (want a retryable refusal)", err)
			default:
				refusals[slotstore.ErrorCode(err)]++
			}
			select { // a refusal is instant: do not spin
			case <-stop:
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	waitUntil(t, 10*time.Second, "a new leader in the majority", func() bool {
		l := leaderOf(majority[0])
		return l != 0 && l != old && leaderOf(majority[1]) == l
	})
	for i := range 20 {
		w.mustPut(majority[i%2], 10*time.Second)
	}
	close(stop)
	bg.Wait()
	if isolatedAcked > 0 {
		t.Errorf("the isolated node acknowledged %d of %d writes it could not replicate", isolatedAcked, isolatedTries)
	}
	if isolatedTries == 0 || c.Net.Dropped() == 0 {
		t.Fatalf("the fault never engaged: %d writes to the isolated node, %d messages dropped", isolatedTries, c.Net.Dropped())
	}

	c.Net.Heal()
	waitUntil(t, 10*time.Second, "the old leader to follow the new one", func() bool {
		l := leaderOf(isolated)
		return l != 0 && l == leaderOf(majority[0])
	})
	w.mustPut(isolated, 10*time.Second)
	w.verify(c, 15*time.Second)
	t.Logf("old leader %d; new leader %d; %d writes acknowledged; the isolated node refused %v; %d messages dropped",
		old, leaderOf(majority[0]), len(w.acked), refusals, c.Net.Dropped())
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestFaultOneWayLeaderToFollower: with everything the leader sends to one
// follower dropped (the follower's own messages still arrive), the cluster
// keeps accepting writes through the leader and the other follower; after
// the network heals the cut-off follower converges.
func TestFaultOneWayLeaderToFollower(t *testing.T) {
	c, w, leader := faultStart(t)
	rest := others(c, leader)
	cutOff, other := rest[0], rest[1]
	w.mustPut(cutOff, 5*time.Second)

	c.Net.DropOneWay(leader, cutOff.NodeID())
	dropped := c.Net.Dropped()
	for i := range 20 {
		if i%2 == 0 {
			w.mustPut(c.Nodes[leader-1], 5*time.Second)
		} else {
			w.mustPut(other, 5*time.Second)
		}
	}
	// Through the cut-off follower, a forwarded write reaches the leader but
	// its answer does not come back: the outcome is unknown, never a false ack.
	_, err := w.put(cutOff, time.Second)
	t.Logf("write through the cut-off follower: %v", err)
	if c.Net.Dropped() == dropped {
		t.Fatal("the fault never engaged")
	}

	c.Net.Heal()
	w.mustPut(cutOff, 10*time.Second)
	w.verify(c, 15*time.Second)
	t.Logf("leader %d, cut-off follower %d: %d writes acknowledged, %d messages dropped",
		leader, cutOff.NodeID(), len(w.acked), c.Net.Dropped())
}

// TestFaultPartitionAfterRestart: a restarted node keeps its place in the
// fault network and its fault disk.
func TestFaultPartitionAfterRestart(t *testing.T) {
	c := faultCluster(t)
	w := newWrites(t, c)
	n := c.Restart(0)
	id := n.NodeID()

	disk := c.Disk(0)
	disk.SetSyncDelay(5 * time.Millisecond)
	w.mustPut(n, 10*time.Second)
	waitUntil(t, 10*time.Second, "a slow sync on the restarted node", func() bool { return disk.DelayedSyncs() > 0 })
	disk.SetSyncDelay(0)

	// Until the restarted node has heard from a leader, "it lost the leader"
	// below would hold before the isolation did anything.
	waitUntil(t, 10*time.Second, "the restarted node to know the group's leader", func() bool { return leaderOf(n) != 0 })
	dropped := c.Net.Dropped()
	c.Net.Isolate(id)
	waitUntil(t, 10*time.Second, "the restarted node to lose the group's leader", func() bool { return leaderOf(n) == 0 })
	waitUntil(t, 10*time.Second, "the majority to lead the group", func() bool {
		l := leaderOf(others(c, id)[0])
		return l != 0 && l != id
	})
	waitUntil(t, 10*time.Second, "isolation to drop the restarted node's messages", func() bool { return c.Net.Dropped() > dropped })
	c.Net.Heal()
	c.WaitReady()
	w.mustPut(n, 10*time.Second)
	w.verify(c, 15*time.Second)
}
