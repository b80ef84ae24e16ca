package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"

	"github.com/cockroachdb/pebble/v2"
)

// TestReplicaMovesBackToANodeThatWasDown: a group's replica is moved off a
// node while that node is down, so the node never stops it and its Raft log
// and store rows stay behind; then the group is moved back to the node as a
// new replica. The node must drop what the old replica left — dragonboat
// refuses a new replica whose state machine is not empty by panicking ("new
// node at non-zero index"), which took the whole process down (found by
// make chaos: a schedule restarted a node between a move off it and a move
// back) — and the new replica must come up with the group's data.
func TestReplicaMovesBackToANodeThatWasDown(t *testing.T) {
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
	var leader slotstore.NodeID
	waitUntil(t, 10*time.Second, "a leader of group 1", func() bool {
		st, ok := c.Nodes[0].Routes().Group(g)
		leader = st.Leader
		return ok && leader != 0
	})
	peers := c.Nodes[0].Controller().Groups[g].Peers
	var down, free, other slotstore.NodeID // a follower to stop, the node without a replica, the third peer
	for i := 1; i <= 4; i++ {
		id := slotstore.NodeID(i)
		switch _, ok := peers[id]; {
		case !ok:
			free = id
		case id != leader && down == 0:
			down = id
		case id != leader:
			other = id
		}
	}
	if down == 0 || free == 0 || other == 0 {
		t.Fatalf("peers %v, leader n%d: no follower to stop", peers, leader)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	via := c.Nodes[leader-1]
	put := func(key string) {
		t.Helper()
		for {
			res, _, err := via.Propose(ctx, &meta.PutKV{Key: key, Value: []byte(key)})
			if err == nil && res.OK() {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("put %s: %v %v", key, err, res.Err())
			}
			time.Sleep(20 * time.Millisecond) // a leader change under -race load; bounded by ctx
		}
	}
	put("before")
	// The replica to be stopped has applied it: its state machine's rows
	// then say so (a non-zero applied index).
	waitUntil(t, 10*time.Second, fmt.Sprintf("n%d applied the first write", down), func() bool {
		v, info, err := c.Nodes[down-1].Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString("before"), Key: "before"}, meta.Local)
		kv, _ := v.(*meta.KV)
		return err == nil && info.ServedBy == down && kv != nil
	})

	move := func(from, to slotstore.NodeID) controller.Group {
		t.Helper()
		moveReplica(ctx, t, via, g, from, to)
		return *via.Controller().Groups[g]
	}

	// What the replica on the node to be stopped holds of group 1.
	i := int(down) - 1
	c.StopNode(i)
	left := storeRows(t, c.DataDir(i), meta.GroupPrefix(g))
	move(down, free)
	put("while-down")
	// Back, the node learns it lost the replica (it may start it from its
	// stale controller state first, and stop it and remove its data then).
	c.StartNode(i)
	// Under make test (-race, packages side by side) the restart, the
	// controller catch-up and the stop (its Raft data removal waits up to
	// RequestTimeout) have taken more than 10 s; the node logs are shown
	// if this fails.
	waitUntil(t, 30*time.Second, "the removed replica's rows gone", func() bool {
		k, err := c.Nodes[i].Testing().KeyCount(g, nil)
		return err == nil && k == 0
	})
	// Now as if a restart had cut that removal short: the old rows are back
	// and the node's controller state already knows it is not a replica.
	c.StopNode(i)
	putStoreRows(t, c.DataDir(i), left)
	c.StartNode(i)
	grp := move(other, down)
	put("after")

	// The new replica on the node that was down has every write.
	n := c.Nodes[down-1]
	for _, key := range []string{"before", "while-down", "after"} {
		waitUntil(t, 10*time.Second, fmt.Sprintf("n%d's own replica has %s", down, key), func() bool {
			v, info, err := n.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key}, meta.Linearizable)
			kv, _ := v.(*meta.KV)
			return err == nil && info.ServedBy == down && kv != nil && string(kv.Value) == key
		})
	}
	if rid := grp.Peers[down]; rid == 0 || rid == peers[down] {
		t.Fatalf("n%d holds replica %d of group 1 (was %d): want a new replica id", down, rid, peers[down])
	}
	checkAll(t, ctx, c.Nodes[0], "after the move back")
}

// storeRows reads every row under prefix from a stopped node's store.
func storeRows(t *testing.T, dataDir string, prefix []byte) [][2][]byte {
	t.Helper()
	db, err := store.Open(filepath.Join(dataDir, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := liveRows(t, db, prefix)
	if len(rows) == 0 {
		t.Fatalf("no rows under %x in %s", prefix, dataDir)
	}
	return rows
}

// liveRows reads every row under prefix from db.
func liveRows(t *testing.T, db *store.DB, prefix []byte) [][2][]byte {
	t.Helper()
	it, err := db.Pebble().NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var rows [][2][]byte
	for it.First(); it.Valid(); it.Next() {
		rows = append(rows, [2][]byte{slices.Clone(it.Key()), slices.Clone(it.Value())})
	}
	return rows
}

// putStoreRows writes rows into a stopped node's store.
func putStoreRows(t *testing.T, dataDir string, rows [][2][]byte) {
	t.Helper()
	db, err := store.Open(filepath.Join(dataDir, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := db.Pebble().NewBatch()
	for _, r := range rows {
		_ = b.Set(r[0], r[1], nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// moveReplica moves g's replica from one node to another through via and
// waits until the task succeeds (failing t otherwise, or at ctx's end).
func moveReplica(ctx context.Context, t *testing.T, via *cluster.Node, g slotstore.GroupID, from, to slotstore.NodeID) slotstore.Task {
	t.Helper()
	return runTask(ctx, t, via, fmt.Sprintf("move g%d n%d→n%d", g, from, to), func(ctx context.Context) (slotstore.Task, error) {
		return via.Operator().CreateReplicaMove(ctx, g, from, to)
	})
}

// runTask asks via for a task (create) and waits until it succeeds
// (failing t otherwise, or at ctx's end). A controller proposal that a
// stopped leader dropped is only answered at its deadline, so it asks in
// short attempts, as a client would (asking again for the same task
// resumes it).
func runTask(ctx context.Context, t *testing.T, via *cluster.Node, what string, create func(context.Context) (slotstore.Task, error)) slotstore.Task {
	t.Helper()
	var task slotstore.Task
	for {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var err error
		task, err = create(actx)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	within := time.Minute
	if dl, ok := ctx.Deadline(); ok {
		within = time.Until(dl)
	}
	testutil.WaitFor(t, within, 50*time.Millisecond, func() (bool, string) {
		if task.Status == controller.TaskRunning {
			task, _ = via.Operator().Task(task.ID)
		}
		return task.Status != controller.TaskRunning, fmt.Sprintf("%s did not end: %+v", what, task)
	})
	if task.Status != controller.TaskSucceeded {
		t.Fatalf("%s: %s at %s: %s", what, task.Status, task.Phase, task.Error)
	}
	return task
}

// syncLog collects the nodes' logs (shown when the test fails).
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
