package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/slotstoretest"
)

// TestNodesRestartAfterReceivingAReplica (issue 51): a node that received
// a replica by a move restarts on its own data — before the group's log is
// compacted past the entries that added the replica as non-voting and
// promoted it, and after — and so does the node that lost one. Before the
// fix the receiving node panicked on every start (dragonboat's
// addNonVoting: "is not a nonVoting"): its replica was started as the voter
// it is now against a log that adds it as non-voting first. Last, a
// replica moved to a node after the leader compacted its log catches up by
// a snapshot that lists it as non-voting, and its node restarts at once.
// Each time the group's rows are the same on every replica and every
// acknowledged write is there.
func TestNodesRestartAfterReceivingAReplica(t *testing.T) {
	var logs syncLog
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs:\n%s", logs.String())
		}
	})
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 4, Groups: 1, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond // steps the tasks
		cfg.TaskPhaseTimeout = 10 * time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)).With("node", cfg.NodeID)
	}})
	const g = slotstore.GroupID(1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var written []string
	put := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			key := fmt.Sprintf("%s-%d", prefix, i)
			putKV(t, c.Nodes[0], key) // forwarded to the leader
			written = append(written, key)
		}
	}
	// agree waits until every replica of g holds every written key and the
	// same rows.
	agree := func(when string) {
		t.Helper()
		st := c.Nodes[0].Controller()
		peers := st.Groups[g].Peers
		waitUntil(t, 30*time.Second, when+": every replica holds the same rows, every write among them", func() bool {
			var first map[string]string
			for node := range peers {
				rows := liveRows(t, c.Nodes[node-1].Testing().Store(), meta.GroupPrefix(g))
				got := map[string]string{}
				for _, r := range rows {
					got[string(r[0])] = string(r[1])
				}
				if first == nil {
					first = got
				} else if rowsDiff(first, got) != "" {
					return false
				}
			}
			for _, key := range written {
				for node := range peers {
					v, _, err := c.Nodes[node-1].Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key}, meta.Local)
					if kv, _ := v.(*meta.KV); err != nil || kv == nil || string(kv.Value) != key {
						return false
					}
				}
			}
			return true
		})
	}
	restart := func(node slotstore.NodeID) {
		t.Helper()
		c.Restart(int(node) - 1) // and waits until every node is ready
	}

	leader, from, to := roles(t, c, g)
	put("before", 10)
	via := c.Nodes[leader-1]
	moveReplica(ctx, t, via, g, from, to)
	put("moved", 10)

	// The receiving node's log still holds its addition and promotion.
	restart(to)
	restart(from)
	put("restarted", 10)
	agree("after restarts over the whole log")

	// Every replica's log compacted past those entries.
	for node := range c.Nodes[0].Controller().Groups[g].Peers {
		if _, err := c.Nodes[node-1].Testing().CompactGroup(ctx, g); err != nil {
			t.Fatalf("n%d: compact group %d: %v", node, g, err)
		}
	}
	put("compacted", 10)
	restart(to)
	restart(from)
	put("restarted-compacted", 10)
	agree("after restarts over compacted logs")

	// A replica that catches up by a snapshot taken while it was a learner.
	leader, other, _ := roles(t, c, g)
	via = c.Nodes[leader-1]
	if _, err := via.Testing().CompactGroup(ctx, g); err != nil {
		t.Fatalf("n%d: compact group %d: %v", leader, g, err)
	}
	moveReplica(ctx, t, via, g, other, from)
	restart(from)
	restart(other)
	put("snapshot", 10)
	agree("after a move by snapshot and restarts")
}

// roles names g's leader, a follower peer and the node without a replica
// of g (four nodes, three replicas).
func roles(t *testing.T, c *slotstoretest.Cluster, g slotstore.GroupID) (leader, follower, free slotstore.NodeID) {
	t.Helper()
	waitUntil(t, 10*time.Second, fmt.Sprintf("a leader of group %d", g), func() bool {
		st, ok := c.Nodes[0].Routes().Group(g)
		leader = st.Leader
		return ok && leader != 0
	})
	peers := c.Nodes[0].Controller().Groups[g].Peers
	for i := range c.Nodes {
		id := slotstore.NodeID(i + 1)
		switch _, ok := peers[id]; {
		case !ok:
			free = id
		case id != leader && follower == 0:
			follower = id
		}
	}
	if follower == 0 || free == 0 {
		t.Fatalf("peers %v, leader n%d: no follower or no free node", peers, leader)
	}
	return leader, follower, free
}
