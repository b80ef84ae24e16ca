package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// A replica whose rows were changed behind Raft's back (a flipped bit on
// disk) is found by the next state check, which names the hash slot and
// the replica; the replica is fenced at once — it serves no local read,
// and stays fenced across a restart of its node — and the balancer
// rebuilds it from the majority on another node; the next check is clean
// and no acknowledged write is lost.
func TestAStateCheckFindsFencesAndRebuildsADivergentReplica(t *testing.T) {
	rc := startRebuilds(t, true, func(cfg *cluster.Config) { cfg.CheckEvery = -1 }) // only the checks this test asks for
	c := rc.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &restarts{t: t, c: c, ctx: ctx}
	pause := func(paused bool) { rc.pause(ctx, paused) }
	pause(true) // until the fence was looked at
	r.put("before", 40)

	const g = slotstore.GroupID(1)
	check := func(via int) slotstore.GroupCheck {
		t.Helper()
		got, err := c.Nodes[via].Operator().Recovery().CheckGroup(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("check through n%d: %s at %d, replicas %+v, differing %v, minority %v, fenced %v, %s",
			via+1, got.Verdict, got.Index, got.Replicas, got.Differing, got.Minority, got.Fenced, got.Action)
		return got
	}
	// Through a node that may not lead the controller: asked of the leader.
	clean := check(3)
	if clean.Verdict != slotstore.CheckConsistent || len(clean.Replicas) != 3 || clean.Index == 0 || clean.Replicas[0].Rows == 0 {
		t.Fatalf("the first check: %+v", clean)
	}

	victim, key, hs := diverge(t, c, g, r.written)
	st := c.Nodes[0].Controller()

	found := check(0)
	if found.Verdict != slotstore.CheckDiverged || !slices.Equal(found.Minority, []slotstore.NodeID{victim}) ||
		!slices.Equal(found.Differing, []slotstore.HashSlot{hs}) || !slices.Equal(found.Fenced, []slotstore.NodeID{victim}) {
		t.Fatalf("the check after n%d's row of slot %d changed: %+v", victim, hs, found)
	}
	n := c.Nodes[victim-1]
	fenced := func(n *cluster.Node) bool {
		i := slices.IndexFunc(n.LocalStatus(ctx).Failed, func(rf slotstore.ReplicaFailure) bool { return rf.Group == g })
		return i >= 0 && strings.Contains(n.LocalStatus(ctx).Failed[i].Reason, "fenced by a state check")
	}
	if !fenced(n) {
		t.Fatalf("n%d does not report its replica fenced: %+v", victim, n.LocalStatus(ctx).Failed)
	}
	// No local read of the group is served by the fenced replica.
	if _, info, err := n.Read(ctx, &meta.GetKV{HashSlot: hs, Key: key}, meta.Local); err == nil && info.ServedBy == victim {
		t.Fatalf("n%d still serves local reads of group %d", victim, g)
	}
	if err := n.Ready(); err == nil || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("readiness of a node with a fenced replica: %v", err)
	}
	waitUntil(t, 10*time.Second, "a decision that records the divergence", func() bool {
		return len(decisionsOf(c.Nodes[0], g, slotstore.Reason(slotstore.CheckDiverged))) > 0
	})
	if v, err := c.Nodes[0].Operator().Group(ctx, g); err != nil || v.LastCheck == nil || v.LastCheck.CheckID != found.CheckID {
		t.Fatalf("the group's view lacks its last check: %v %+v", err, v.LastCheck)
	}
	ctrlReg, victimReg := rc.reg(c.Nodes[0].ControllerLeader()), rc.reg(victim)
	if v := gaugeOf(t, ctrlReg, "slotmeta_group_check_diverged", map[string]string{"group": "1"}); v != 1 {
		t.Fatalf("slotmeta_group_check_diverged{group=1} on the controller leader = %v", v)
	}
	if v := gaugeOf(t, victimReg, "slotmeta_replica_failed", map[string]string{"group": "1", "replica": fmt.Sprint(st.Groups[g].Peers[victim])}); v != 1 {
		t.Fatalf("slotmeta_replica_failed of the fenced replica = %v", v)
	}
	// The fence outlives the process.
	c.StopNode(int(victim) - 1)
	n, err := c.TryStartNode(int(victim) - 1)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the restarted node to report its replica fenced", func() bool { return fenced(n) })
	if _, info, err := n.Read(ctx, &meta.GetKV{HashSlot: hs, Key: key}, meta.Local); err == nil && info.ServedBy == victim {
		t.Fatalf("n%d started its fenced replica again: it serves local reads", victim)
	}

	// Rebuilt from the majority by the balancer, on the free node.
	pause(false)
	waitUntil(t, 60*time.Second, fmt.Sprintf("the balancer to move group %d's replica off n%d", g, victim), func() bool {
		_, still := c.Nodes[0].Controller().Groups[g].Peers[victim]
		return !still && !fenced(n)
	})
	r.put("after", 20)
	r.agree("after the rebuild")
	if again := check(1); again.Verdict != slotstore.CheckConsistent {
		t.Fatalf("the check after the rebuild: %+v", again)
	}
}

// checkAll runs a state check of every group through n and fails unless
// every replica of each agrees (issue 52: the checks are the proof that
// replicas agree after moves, splits, merges, recoveries and restarts —
// and they must raise no false alarm there).
func checkAll(t *testing.T, ctx context.Context, n *cluster.Node, when string) {
	t.Helper()
	checkGroups(t, ctx, n, when, n.Controller().GroupIDs()...)
}

// checkGroups is checkAll of the groups named.
func checkGroups(t *testing.T, ctx context.Context, n *cluster.Node, when string, groups ...slotstore.GroupID) {
	t.Helper()
	for _, g := range groups {
		var got slotstore.GroupCheck
		var err error
		// As a client does: again after a retryable refusal (the
		// controller's leader moved since the node last heard).
		waitUntil(t, 30*time.Second, fmt.Sprintf("%s: a check of group %d", when, g), func() bool {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			got, err = n.Operator().Recovery().CheckGroup(cctx, g)
			return err == nil || !slotstore.ErrorCode(err).Retryable()
		})
		if err != nil {
			t.Fatalf("%s: check of group %d: %v", when, g, err)
		}
		if got.Verdict != slotstore.CheckConsistent {
			t.Fatalf("%s: check of group %d: %s (differing %v, minority %v, replicas %+v)", when, g, got.Verdict, got.Differing, got.Minority, got.Replicas)
		}
	}
}

// The controller leader checks every group in the background, one at a
// time, each at least once per CheckEvery; each group's view shows its
// last check.
func TestTheControllerLeaderChecksEveryGroupInTheBackground(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 3, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.CheckEvery = time.Second
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := &restarts{t: t, c: c, ctx: ctx}
	r.put("k", 20)
	first := map[slotstore.GroupID]uint64{}
	waitUntil(t, 30*time.Second, "every group checked twice in the background", func() bool {
		vs, err := c.Nodes[0].Operator().Groups(ctx)
		if err != nil || len(vs) != 3 {
			return false
		}
		twice := 0
		for _, v := range vs {
			if v.LastCheck == nil {
				continue
			}
			if v.LastCheck.Verdict != slotstore.CheckConsistent {
				t.Fatalf("a background check of group %d: %+v", v.ID, v.LastCheck)
			}
			if id, ok := first[v.ID]; !ok {
				first[v.ID] = v.LastCheck.CheckID
			} else if id != v.LastCheck.CheckID {
				twice++
			}
		}
		return twice == 3
	})
}

// diverge changes, behind Raft's back, one byte of a written key's row on
// a follower of g (a flipped bit on its disk); it returns the follower,
// the key and its hash slot.
func diverge(t *testing.T, c *slotstoretest.Cluster, g slotstore.GroupID, written []string) (slotstore.NodeID, string, slotstore.HashSlot) {
	t.Helper()
	leader := awaitLeader(t, c, g)
	st := c.Nodes[0].Controller()
	var victim slotstore.NodeID
	for node := range st.Groups[g].Peers {
		if node != leader && (victim == 0 || node < victim) {
			victim = node
		}
	}
	tbl := c.Nodes[0].Routes().Table()
	i := slices.IndexFunc(written, func(k string) bool { return tbl.Group(slotstore.HashSlotOfString(k)) == g })
	key := written[i]
	hs := damage(t, c, victim, g, key, 1)
	return victim, key, hs
}

// On three nodes — no node outside the group — a fenced replica is rebuilt
// in place: the balancer moves it from its node to itself, which removes
// it, then adds a new replica there from a snapshot; the next check is
// clean, every write reads back, and the rebuilt replica's node restarts
// on its data.
func TestADivergentReplicaIsRebuiltInPlaceOnThreeNodes(t *testing.T) {
	rc := startRebuilds(t, true, func(cfg *cluster.Config) { cfg.CheckEvery = time.Hour }, 3) // no background check in the test's time but the recheck
	c := rc.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &restarts{t: t, c: c, ctx: ctx}
	r.put("before", 40)
	const g = slotstore.GroupID(1)
	old := c.Nodes[0].Controller().Groups[g].Peers
	victim, _, hs := diverge(t, c, g, r.written)
	got, err := c.Nodes[0].Operator().Recovery().CheckGroup(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != slotstore.CheckDiverged || !slices.Equal(got.Fenced, []slotstore.NodeID{victim}) || !slices.Equal(got.Differing, []slotstore.HashSlot{hs}) {
		t.Fatalf("the check: %+v", got)
	}
	waitUntil(t, 60*time.Second, fmt.Sprintf("n%d's replica of group %d rebuilt in place", victim, g), func() bool {
		peers := c.Nodes[0].Controller().Groups[g].Peers
		return len(peers) == 3 && peers[victim] != 0 && peers[victim] != old[victim]
	})
	if d := decisionsOf(c.Nodes[0], g, "replica_failed"); len(d) == 0 || !strings.Contains(d[len(d)-1].Detail, "in place") {
		t.Fatalf("the balancer's decision: %+v", d)
	}
	var rebuilt *slotstore.Task
	for _, tk := range c.Nodes[0].Operator().Tasks() {
		if tk.Group == g && tk.From == victim && tk.To == victim {
			rebuilt = &tk
			break
		}
	}
	if rebuilt == nil || rebuilt.Status != "succeeded" || len(rebuilt.History) == 0 || rebuilt.History[0].Phase != "remove_old" {
		t.Fatalf("the rebuild in place: %+v", rebuilt)
	}
	t.Logf("rebuilt in place: task %d, replica %d → %d, phases %v", rebuilt.ID, old[victim], rebuilt.NewReplicaID, phasesOf(rebuilt.History))
	// The controller leader checks the group again by itself once the
	// minority was rebuilt: the alarm ends with a clean check.
	waitUntil(t, 30*time.Second, "a clean check of the rebuilt group", func() bool {
		v, err := c.Nodes[0].Operator().Group(ctx, g)
		return err == nil && v.LastCheck != nil && v.LastCheck.CheckID != got.CheckID && v.LastCheck.Verdict == slotstore.CheckConsistent
	})
	r.put("after", 20)
	r.agree("after the rebuild in place") // ends with a check of every group
	r.restart(victim)
	r.put("restarted", 10)
	r.agree("after a restart of the rebuilt node")

	// An operator rebuilds a healthy replica in place — the group's
	// leader's, which hands its leadership to another voter first: the
	// node stops the running old replica and starts the new one.
	leader := awaitLeader(t, c, g)
	before := c.Nodes[0].Controller().Groups[g].Peers[leader]
	moveReplica(ctx, t, c.Nodes[0], g, leader, leader)
	if after := c.Nodes[0].Controller().Groups[g].Peers[leader]; after == before || after == 0 {
		t.Fatalf("n%d's replica %d after its rebuild in place: %d", leader, before, after)
	}
	r.put("rebuilt-healthy", 10)
	r.agree("after an operator's rebuild in place of the leader's replica")
}

func phasesOf(h []slotstore.PhaseRecord) []slotstore.TaskPhase {
	out := make([]slotstore.TaskPhase, len(h))
	for i, r := range h {
		out[i] = r.Phase
	}
	return out
}

// damage flips bits (xor) in the last byte of key's row in group g on node
// n's store, behind Raft's back; it returns the key's hash slot.
func damage(t *testing.T, c *slotstoretest.Cluster, n slotstore.NodeID, g slotstore.GroupID, key string, xor byte) slotstore.HashSlot {
	t.Helper()
	hs := slotstore.HashSlotOfString(key)
	db := c.Nodes[n-1].Testing().Store().Pebble()
	kk := meta.KVKey(g, hs, key)
	v, closer, err := db.Get(kk)
	if err != nil {
		t.Fatal(err)
	}
	flipped := slices.Clone(v)
	flipped[len(flipped)-1] ^= xor
	closer.Close()
	if err := db.Set(kk, flipped, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	return hs
}

// Two replicas of three that differ from each other and from the third:
// no majority, nothing fenced or rebuilt automatically — the group's reads
// are refused on every node (its writes go on, other groups are read) until
// an operator has rebuilt the wrong replicas from the right one and a check
// finds them agreeing, which lifts the fence.
func TestNoMajorityFencesTheGroupsReads(t *testing.T) {
	rc := startRebuilds(t, false, func(cfg *cluster.Config) { cfg.CheckEvery = -1 }, 3)
	c := rc.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &restarts{t: t, c: c, ctx: ctx}
	r.put("before", 40)
	const g = slotstore.GroupID(1)
	leader := awaitLeader(t, c, g)
	tbl := c.Nodes[0].Routes().Table()
	key := r.written[slices.IndexFunc(r.written, func(k string) bool { return tbl.Group(slotstore.HashSlotOfString(k)) == g })]
	other := r.written[slices.IndexFunc(r.written, func(k string) bool { return tbl.Group(slotstore.HashSlotOfString(k)) != g })]
	var followers []slotstore.NodeID
	for node := range c.Nodes[0].Controller().Groups[g].Peers {
		if node != leader {
			followers = append(followers, node)
		}
	}
	slices.Sort(followers)
	hs := damage(t, c, followers[0], g, key, 1)
	damage(t, c, followers[1], g, key, 2)

	got, err := c.Nodes[0].Operator().Recovery().CheckGroup(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != slotstore.CheckNoMajority || len(got.Fenced) != 0 || !slices.Equal(got.Differing, []slotstore.HashSlot{hs}) {
		t.Fatalf("the check: %+v", got)
	}
	read := func(n *cluster.Node, k string, cons meta.Consistency) error {
		_, _, err := n.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, cons)
		return err
	}
	for i, n := range c.Nodes {
		waitUntil(t, 10*time.Second, fmt.Sprintf("n%d to refuse group %d's reads", i+1, g), func() bool {
			return slotstore.ErrorCode(read(n, key, meta.Linearizable)) == slotstore.CodeFailedPrecondition &&
				slotstore.ErrorCode(read(n, key, meta.Local)) == slotstore.CodeFailedPrecondition
		})
		if err := read(n, other, meta.Linearizable); err != nil {
			t.Fatalf("n%d: a read of another group: %v", i+1, err)
		}
		rows := n.ReadRows(ctx, []*meta.GetRows{{HashSlot: hs, Table: meta.TableKV, Keys: []meta.RowRef{{Key: key}}}}, meta.Linearizable)
		if len(rows) != 1 || slotstore.ErrorCode(rows[0].Err) != slotstore.CodeFailedPrecondition {
			t.Fatalf("n%d: a batch read of the fenced group: %+v", i+1, rows)
		}
	}
	if v, err := c.Nodes[0].Operator().Group(ctx, g); err != nil || v.ReadsFenced == "" {
		t.Fatalf("the group's view: %v %q", err, v.ReadsFenced)
	}
	r.put("while-fenced", 10) // writes go on

	// The operator rebuilds both followers from the leader, one at a time,
	// and checks again: the fence is lifted.
	for _, f := range followers {
		moveReplica(ctx, t, c.Nodes[0], g, f, f)
	}
	again, err := c.Nodes[0].Operator().Recovery().CheckGroup(ctx, g)
	if err != nil || again.Verdict != slotstore.CheckConsistent || !strings.Contains(again.Action, "lifted") {
		t.Fatalf("the check after the rebuilds: %v %+v", err, again)
	}
	r.agree("after the fence was lifted") // every replica reads every write
}

// awaitLeader waits until node 1 knows a leader of g and returns it.
func awaitLeader(t *testing.T, c *slotstoretest.Cluster, g slotstore.GroupID) slotstore.NodeID {
	t.Helper()
	var leader slotstore.NodeID
	waitUntil(t, 10*time.Second, fmt.Sprintf("a leader of group %d", g), func() bool {
		st, ok := c.Nodes[0].Routes().Group(g)
		leader = st.Leader
		return ok && leader != 0
	})
	return leader
}
