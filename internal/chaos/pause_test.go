package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// electionTimeout is the hosts' election timeout (startHosts: 50 ms ticks,
// ten of them).
const electionTimeout = 500 * time.Millisecond

// TestPausedNodesServeNoStaleReads (issue 48, item 2) stops processes on
// separate hosts with SIGSTOP — as a long GC pause, a VM's suspension or a
// debugger would: sockets open, clocks running — while clients write and
// read linearizably through every node, and readers pinned to each node
// keep requests waiting at the paused one. In turn: the leader of group 1
// for 1× and then 3× the election timeout, the controller leader for 2×, a
// follower of group 1 for 4×; then SIGCONT. A leader paused past its lease
// must not answer from it when it resumes (the others elected a leader
// and took writes meanwhile): the history is linearizable, nothing
// acknowledged is lost, nothing applied twice. The time each resumed
// leader took to know it no longer leads is logged.
func TestPausedNodesServeNoStaleReads(t *testing.T) {
	hc := startHosts(t, append(append([]string(nil), hostArgs...), "--groups", "1")...)
	const prefix = "pause"
	keys := []string{prefix + "-alpha", prefix + "-bravo", prefix + "-charlie"}
	rec := newRecorder()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	startKVClients(ctx, &wg, hc, keys, rec, 48, time.Now().Add(2*time.Minute), prefix)
	for i := range hc.size() {
		r := &client{id: 100 + i, tc: hc, keys: keys, rec: rec, rng: rand.New(rand.NewSource(int64(4800 + i))), idemPrefix: prefix + "-"}
		wg.Go(func() {
			pace := time.NewTicker(5 * time.Millisecond)
			defer pace.Stop()
			for ctx.Err() == nil {
				r.kvGetAt(hc.url(i), keys[r.rng.Intn(len(keys))], "kv.get")
				select {
				case <-ctx.Done():
				case <-pace.C:
				}
			}
		})
	}
	waitOps := func(more int) {
		t.Helper()
		base := rec.kvOps()
		testutil.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() (bool, string) {
			n := rec.kvOps() - base
			return n >= more, fmt.Sprintf("%d operations recorded since, want %d", n, more)
		})
	}
	waitOps(100)

	leads := func(i int, g slotstore.GroupID) (bool, uint64) {
		s, err := getJSON[slotstore.ClusterSummary](hc, i, "/v1/cluster")
		if err != nil {
			return false, 0
		}
		for _, l := range s.Local {
			if l.Group == g {
				return l.Leader == s.NodeID, l.Term
			}
		}
		return false, 0
	}
	pause := func(node slotstore.NodeID, g slotstore.GroupID, times int, what string) {
		t.Helper()
		d := time.Duration(times) * electionTimeout
		hc.c.Hosts[node-1].PauseFor(d)
		at := time.Now()
		var stepped time.Duration
		var led bool
		testutil.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() (bool, string) {
			if led, _ = leads(int(node-1), g); !led {
				stepped = time.Since(at)
			}
			return !led, fmt.Sprintf("n%d still leads group %d %v after it resumed", node, g, time.Since(at))
		})
		t.Logf("%s (n%d) paused %v (%d× the election timeout): it knew it no longer led group %d %v after it resumed", what, node, d, times, g, stepped.Round(time.Millisecond))
		waitOps(100)
	}
	leaderOf := func(g slotstore.GroupID) slotstore.NodeID {
		t.Helper()
		return hc.agreedLeader(g, 0, 20*time.Second)
	}

	// 1×: an election may or may not have ended when it resumes; either
	// way no read may be stale.
	l := leaderOf(1)
	hc.c.Hosts[l-1].PauseFor(electionTimeout)
	t.Logf("group 1's leader n%d paused %v (1× the election timeout) and resumed", l, electionTimeout)
	waitOps(100)
	pause(leaderOf(1), 1, 3, "group 1's leader")
	ctrl := hc.ctrlLeader(0)
	for i := 1; ctrl == 0 && i < hc.size(); i++ {
		ctrl = hc.ctrlLeader(i)
	}
	if ctrl == 0 {
		t.Fatal("no node knows the controller leader")
	}
	pause(ctrl, 0, 2, "the controller leader")
	l = leaderOf(1)
	follower := l%slotstore.NodeID(hc.size()) + 1
	hc.c.Hosts[follower-1].PauseFor(4 * electionTimeout)
	t.Logf("group 1's follower n%d paused %v (4×) and resumed", follower, 4*electionTimeout)
	waitOps(100)

	stop()
	wg.Wait()
	for _, h := range hc.c.Hosts {
		h.WaitReady(time.Now().Add(30 * time.Second))
	}
	lost, verdict := checkKVHistory(t, hc, rec, keys, prefix, 48)
	t.Logf("pauses: %d operations, history %s, acked=%d lost=%d", len(rec.kv), verdict, lost.acked, lost.lost)
}
