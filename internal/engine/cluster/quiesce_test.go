package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestQuiescedGroupWakesWhenItsLeaderIsCutOff: with quiesce (the default), an idle
// group stops exchanging heartbeats (its leader hears nothing from its
// followers for seconds); when the leader's node is then cut off, a write
// through the majority finds no reachable leader, wakes the group (and the
// controller leader wakes it too, once it sees the node unreachable), the
// followers elect a new leader and the write is acknowledged; every
// acknowledged write reads back after the heal.
func TestQuiescedGroupWakesWhenItsLeaderIsCutOff(t *testing.T) {
	c, w, leader, _ := quiescedGroup(t)
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

// TestAQuiescedLeaderWhoseFollowersAreGoneStepsDown: the two other nodes
// of a quiesced group stop; the survivor's controller replica loses its
// quorum, and the survivor wakes its own replica that leads the group
// (wakeOwnLeaders): it checks its quorum, steps down, and the node's own
// view says the group has no leader — instead of the leader it was, for
// as long as nothing touched it (without the wake: for good).
func TestAQuiescedLeaderWhoseFollowersAreGoneStepsDown(t *testing.T) {
	c, _, leader, _ := quiescedGroup(t)
	for _, o := range others(c, leader) {
		c.StopNode(int(o.NodeID()) - 1)
	}
	ln := c.Nodes[leader-1]
	waitUntil(t, 10*time.Second, "the survivor's replica steps down", func() bool { return leaderOf(ln) != leader })
}

// TestQuiescedGroupStaysHealthyAndTransfers: a quiesced group exchanges no
// Raft messages, so its leader hears no follower for as long as it stays
// quiet — which is no evidence of a fault: its view stays healthy with every
// voter live, the preflight lets a transfer go, and the transfer (which wakes
// the group) lands. A follower that is cut off and asked to answer (the
// group woken by a write) turns unreachable as before.
func TestQuiescedGroupStaysHealthyAndTransfers(t *testing.T) {
	c, w, _, follower := quiescedGroup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ctrl *cluster.Node
	waitUntil(t, 5*time.Second, "a controller leader", func() bool {
		id := c.Nodes[0].ControllerLeader()
		if id != 0 {
			ctrl = c.Nodes[id-1]
		}
		return ctrl != nil
	})
	ctrl.Testing().Leader().ObserveOnce(ctx)
	v, err := ctrl.Operator().Group(ctx, faultGroup)
	if err != nil {
		t.Fatal(err)
	}
	if v.Health != slotstore.GroupHealthy || v.LiveVoters != 3 {
		t.Fatalf("a quiesced group's view: health %s, %d live voters: %+v", v.Health, v.LiveVoters, v.Replicas)
	}
	for _, r := range v.Replicas {
		if r.Node == follower && (r.HeardAgoMs < 1000 || r.UnansweredMs != 0) {
			t.Fatalf("the quiesced follower's replica view: %+v", r)
		}
	}
	// The transfer wakes the group; the leader's node refuses it while the
	// woken target has not answered yet — at once here, but once in CI of
	// 526556d (-race, two loaded cores) not within the first attempt: asked
	// again, as an operator would, for up to 5 s.
	attempts := 0
	waitUntil(t, 5*time.Second, fmt.Sprintf("a transfer of the quiesced group to node %d", follower), func() bool {
		attempts++
		pf, _, err := ctrl.Operator().LeaderTransfer(ctx, faultGroup, follower, false)
		if err != nil && !strings.Contains(err.Error(), "the target does not answer the leader") || err == nil && !pf.OK {
			t.Fatalf("transfer of the quiesced group to node %d: %+v, %v", follower, pf, err)
		}
		return err == nil
	})
	t.Logf("the quiesced group transferred at attempt %d", attempts)
	waitUntil(t, 5*time.Second, "the follower leads", func() bool { return leaderOf(c.Nodes[0]) == follower })

	// Asked and not answering: unreachable.
	cut := others(c, follower)[0].NodeID()
	c.Net.Isolate(cut)
	w.mustPut(c.Nodes[follower-1], 10*time.Second) // wakes the group: heartbeats go unanswered
	waitUntil(t, 10*time.Second, "the cut-off voter counts as not live", func() bool {
		ctrl := c.Nodes[follower-1]
		if id := ctrl.ControllerLeader(); id != 0 && id != cut {
			ctrl = c.Nodes[id-1]
		}
		ctrl.Testing().Leader().ObserveOnce(ctx)
		v, err := ctrl.Operator().Group(ctx, faultGroup)
		return err == nil && v.LiveVoters == 2 && v.Health == slotstore.GroupUnderReplicated
	})
	c.Net.Heal()
	w.verify(c, 15*time.Second)
}

// quiescedGroup starts 3 nodes with quiesce (RTT 20 ms), writes once and
// waits until group 1 is led by its preferred leader and quiesced: no Raft
// message from a follower's replica for well over a heartbeat interval —
// dragonboat quiesces a group after ten election timeouts without traffic.
func quiescedGroup(t *testing.T) (c *slotstoretest.Cluster, w *writes, leader, follower slotstore.NodeID) {
	c = slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Faults: true, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
	}})
	w = newWrites(t, c)
	w.mustPut(c.Nodes[0], 5*time.Second)
	// The reconciler first moves the leader to the preferred one.
	leader = c.Nodes[0].Controller().Groups[faultGroup].PreferredLeader
	waitUntil(t, 10*time.Second, "the preferred leader leads", func() bool { return leaderOf(c.Nodes[0]) == leader })
	follower = others(c, leader)[0].NodeID()
	waitUntil(t, 15*time.Second, "the group quiesces", func() bool {
		return c.Nodes[leader-1].HeardAgoMs(faultGroup, follower) > 1000
	})
	return c, w, leader, follower
}

// TestQuiescedTransferWhoseTimeoutNowIsLost: a transfer of a quiesced
// group whose TimeoutNow never reaches the target (here a cut link; in
// scripts' tests a target that had just restarted) must not leave the group
// stuck. dragonboat gives a pending transfer up only in a leader's tick,
// which a quiesced leader does not run, and ignores further requests while
// one is pending: unless the transfer wakes the leader, every later attempt
// to the same target is ignored and the group refuses proposals until
// something else wakes it.
func TestQuiescedTransferWhoseTimeoutNowIsLost(t *testing.T) {
	c, w, leader, follower := quiescedGroup(t)
	ln := c.Nodes[leader-1]
	c.Net.DropOneWay(leader, follower)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	err := ln.TransferLeader(ctx, faultGroup, follower)
	cancel()
	if l := leaderOf(ln); err == nil || l == follower {
		t.Fatalf("a transfer over a cut link: %v, node %d leads", err, l)
	}
	c.Net.Heal()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	// The first transfer's TimeoutNow may still land once the link heals:
	// then the follower campaigns and node 1 stops leading before this
	// transfer is asked (not_leader; CI, 2026-12-04) — the group is not
	// stuck either way, which the wait below holds.
	if err := ln.TransferLeader(ctx, faultGroup, follower); err != nil && slotstore.ErrorCode(err) != slotstore.CodeNotLeader {
		t.Fatalf("the transfer after the heal (%v): %v", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("the transfer after the heal landed in %v", time.Since(start).Round(time.Millisecond))
	waitUntil(t, 5*time.Second, "the follower leads", func() bool { return leaderOf(c.Nodes[0]) == follower })
	w.mustPut(c.Nodes[0], 5*time.Second)
	w.verify(c, 15*time.Second)
}

// TestRestartedReplicaOfAQuiescedGroupFindsItsLeader: a replica restarted
// into a quiesced group whose leader's first messages do not reach it (in
// scripts' tests: written into pooled connections to its old process)
// campaigns unanswered — the leader's lease drops its pre-votes —, is
// quiesced by dragonboat's tick count all the same, and the leader quiesces
// too; nothing would touch the group again, and the replica's node would
// route it as leaderless for good. The node wakes every group whose replica
// there knows no leader: once the leader's messages get through, the
// replica finds its leader within a reconcile round and an election. (Here
// something else touched the group in every run without that wake — it
// passed without it; scripts' TestClusterScript under CPU load is what
// failed 2 of 2 without it and passed 3 of 3 with it. Kept as the
// in-process check that the restarted replica does find its leader.)
func TestRestartedReplicaOfAQuiescedGroupFindsItsLeader(t *testing.T) {
	c, w, _, follower := quiescedGroup(t)
	for _, o := range others(c, follower) { // nothing reaches it; what it sends arrives
		c.Net.DropOneWay(o.NodeID(), follower)
	}
	c.StopNode(int(follower) - 1)
	fn, err := c.TryStartNode(int(follower) - 1)
	if err != nil {
		t.Fatal(err)
	}
	// Long enough for the restarted replica (ten election timeouts) and
	// then the leader to quiesce.
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) { // the fault's duration
		if l := leaderOf(fn); l != 0 {
			t.Fatalf("node %d knows leader %d of group %d while nothing reaches it", follower, l, faultGroup)
		}
	}
	c.Net.Heal()
	start := time.Now()
	waitUntil(t, 8*time.Second, "the restarted replica knows its leader", func() bool { return leaderOf(fn) != 0 })
	t.Logf("node %d knew group %d's leader %v after the heal", follower, faultGroup, time.Since(start).Round(time.Millisecond))
	w.mustPut(fn, 5*time.Second)
	w.verify(c, 15*time.Second)
}

// TestWatchProgressLeavesAQuiescedGroupAsleep: a watch over every hash
// slot, served by a follower, gives progress marks every 100 ms from the
// node's own state: the quiesced group exchanges no Raft message for them
// (its leader hears nothing more from that follower). A linearizable start
// is a read round, and wakes it.
func TestWatchProgressLeavesAQuiescedGroupAsleep(t *testing.T) {
	c, _, leader, follower := quiescedGroup(t)
	srv := slotstoretest.ServeAPI(t, c.Nodes[follower-1])
	watchProgress := func(query string, marks int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/watch?resource=kv&progress_interval_ms=100"+query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %v %v", resp, err)
		}
		defer resp.Body.Close()
		events := testutil.SSEEvents(resp.Body)
		for got := 0; got < marks; {
			select {
			case ev := <-events:
				if ev.Event != "progress" || ev.ID == "" {
					t.Fatalf("event %+v, want progress marks", ev)
				}
				got++
			case <-ctx.Done():
				t.Fatalf("%d progress marks of %d", got, marks)
			}
		}
	}
	before := c.Nodes[leader-1].HeardAgoMs(faultGroup, follower)
	watchProgress("", 10) // the first at once, then one every 100 ms
	if after := c.Nodes[leader-1].HeardAgoMs(faultGroup, follower); after < before+800 {
		t.Fatalf("the leader heard from the follower %d ms ago, %d ms before a second of progress marks: the watch woke the group", after, before)
	}
	watchProgress("&linearizable=true", 1)
	waitUntil(t, 5*time.Second, "the linearizable start's read round reaches the leader", func() bool {
		return c.Nodes[leader-1].HeardAgoMs(faultGroup, follower) < 1000
	})
}
