package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
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
	c := startForRestarts(t, &logs, 1)
	const g = slotstore.GroupID(1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &restarts{t: t, c: c, ctx: ctx}
	put, agree, restart := r.put, r.agree, r.restart

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
	leader = awaitLeader(t, c, g)
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

// TestNodesRestartAfterSplitMergeAndSlotMove (issue 51): the nodes of a
// group made by a split, of a group that took a hash slot by a live move,
// and of a group merged away restart on their data — over the whole log
// and after it was compacted — with the same rows on every replica and
// every acknowledged write there.
func TestNodesRestartAfterSplitMergeAndSlotMove(t *testing.T) {
	var logs syncLog
	c := startForRestarts(t, &logs, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &restarts{t: t, c: c, ctx: ctx}
	via := func() *cluster.Node { return c.Nodes[0] } // forwards controller commands to its leader
	restartPeers := func(g slotstore.GroupID) {
		t.Helper()
		for _, node := range slices.Sorted(maps.Keys(c.Nodes[0].Controller().Groups[g].Peers)) {
			r.restart(node)
		}
	}
	r.put("before", 20)

	// A split onto the node without a replica of group 1 and two others.
	_, follower, free := roles(t, c, 1)
	others := slices.DeleteFunc([]slotstore.NodeID{1, 2, 3, 4}, func(n slotstore.NodeID) bool { return n == free || n == follower })
	peers := []slotstore.NodeID{free, follower, others[0]}
	slots := c.Nodes[0].Routes().Table().SlotsOf(1)
	split := runTask(ctx, t, via(), "split group 1", func(ctx context.Context) (slotstore.Task, error) {
		return via().Operator().CreateSplit(ctx, 1, slots[:len(slots)/2], peers)
	})
	ng := split.ToGroup
	if ng == 0 {
		t.Fatalf("the split made no group: %+v", split)
	}
	r.put("split", 20)
	restartPeers(ng)
	r.put("split-restarted", 20)
	r.agree("after a split and restarts of the new group's nodes")

	// A live move of one of group 2's hash slots into the new group.
	hs := c.Nodes[0].Routes().Table().SlotsOf(2)[0]
	runTask(ctx, t, via(), fmt.Sprintf("migrate hash slot %d to group %d", hs, ng), func(ctx context.Context) (slotstore.Task, error) {
		return via().Operator().CreateSlotMigration(ctx, hs, ng)
	})
	r.put("migrated", 20)
	restartPeers(ng)
	restartPeers(2)
	r.agree("after a live hash-slot move and restarts")

	// The logs compacted past all of it.
	st := c.Nodes[0].Controller()
	for _, g := range st.GroupIDs() {
		for node := range st.Groups[g].Peers {
			if _, err := c.Nodes[node-1].Testing().CompactGroup(ctx, g); err != nil {
				t.Fatalf("n%d: compact group %d: %v", node, g, err)
			}
		}
	}
	restartPeers(ng)
	r.put("compacted", 20)
	r.agree("after compaction and restarts")

	// The new group merged back into group 1 and retired.
	left := c.Nodes[0].Controller().Groups[ng].Peers
	runTask(ctx, t, via(), fmt.Sprintf("merge group %d into 1", ng), func(ctx context.Context) (slotstore.Task, error) {
		return via().Operator().CreateMerge(ctx, ng, 1)
	})
	waitUntil(t, 30*time.Second, fmt.Sprintf("group %d retired", ng), func() bool {
		_, still := c.Nodes[0].Controller().Groups[ng]
		return !still
	})
	for _, node := range slices.Sorted(maps.Keys(left)) {
		r.restart(node)
	}
	r.put("merged", 20)
	r.agree("after a merge and restarts of the merged group's nodes")
	waitUntil(t, 30*time.Second, fmt.Sprintf("no node runs a replica of group %d", ng), func() bool {
		for _, n := range c.Nodes {
			for _, rs := range n.LocalStatus(ctx).Replicas {
				if rs.Group == ng {
					return false
				}
			}
		}
		return true
	})
}

// startForRestarts starts four nodes with groups of three replicas whose
// tasks step every 100 ms; their logs are shown if the test fails.
func startForRestarts(t *testing.T, logs *syncLog, groups int) *slotstoretest.Cluster {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs:\n%s", logs.String())
		}
	})
	return slotstoretest.Start(t, slotstoretest.Options{Nodes: 4, Groups: groups, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond // steps the tasks
		cfg.TaskPhaseTimeout = 10 * time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil)).With("node", cfg.NodeID)
	}})
}

// restarts writes keys, restarts nodes and checks the groups' rows.
type restarts struct {
	t       *testing.T
	c       *slotstoretest.Cluster
	ctx     context.Context
	written []string
}

// put writes n keys through node 1 (forwarded to their leaders).
func (r *restarts) put(prefix string, n int) {
	r.t.Helper()
	r.putVia(r.c.Nodes[0], prefix, n)
}

// putVia writes n keys through node via.
func (r *restarts) putVia(via *cluster.Node, prefix string, n int) {
	r.t.Helper()
	for i := range n {
		key := fmt.Sprintf("%s-%d", prefix, i)
		putKV(r.t, via, key)
		r.written = append(r.written, key)
	}
}

// restart closes a node and starts it on its data; it returns once every
// node is ready.
func (r *restarts) restart(node slotstore.NodeID) {
	r.t.Helper()
	r.c.Restart(int(node) - 1)
}

// agree waits until every replica of each group holds the same rows, and
// every replica of a written key's group reads it locally.
func (r *restarts) agree(when string) {
	r.t.Helper()
	waitUntil(r.t, 30*time.Second, when+": every replica holds the same rows, every write among them", func() bool {
		st := r.c.Nodes[0].Controller()
		for _, g := range st.GroupIDs() {
			var first map[string]string
			for node := range st.Groups[g].Peers {
				got := map[string]string{}
				for _, row := range liveRows(r.t, r.c.Nodes[node-1].Testing().Store(), meta.GroupPrefix(g)) {
					got[string(row[0])] = string(row[1])
				}
				if first == nil {
					first = got
				} else if rowsDiff(first, got) != "" {
					return false
				}
			}
		}
		tbl := r.c.Nodes[0].Routes().Table()
		for _, key := range r.written {
			hs := slotstore.HashSlotOfString(key)
			grp, ok := st.Groups[tbl.Group(hs)]
			if !ok {
				return false
			}
			for node := range grp.Peers {
				v, _, err := r.c.Nodes[node-1].Read(r.ctx, &meta.GetKV{HashSlot: hs, Key: key}, meta.Local)
				if kv, _ := v.(*meta.KV); err != nil || kv == nil || string(kv.Value) != key {
					return false
				}
			}
		}
		return true
	})
	checkAll(r.t, r.ctx, r.c.Nodes[0], when)
}
