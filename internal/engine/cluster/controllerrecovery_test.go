package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestRecoverTheController is the controller group's lost-quorum recovery
// (issue 29, the runbook's drill): of three founding nodes (the controller's
// voters) two are lost for good; a fourth node, a non-voting member of the
// controller, survives. Offline, the survivor's controller replica is the
// base (`slotmeta recover-controller --accept-data-loss`), the fourth node
// rejoins (`--rejoin`). Started again, node 1 leads the controller alone
// with every committed change kept and the lost nodes removed; node 4
// follows it; the data groups, which lost their quorum too, are recovered
// as any group is, hold every write and take new ones; a lost node that
// comes back is refused; replicas move off the lost nodes.
func TestRecoverTheController(t *testing.T) {
	logs := &syncLog{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs:\n%s", logs.String())
		}
	})
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.UnreachableAfter = 600 * time.Millisecond
		cfg.TaskPhaseTimeout = 10 * time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", cfg.NodeID)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	api := slotstoretest.ServeAPIAt(t, c.Nodes[0], c.APIAddr(0))
	c.Join(c.APIAddr(0)) // node 4: a non-voting member of the controller
	var keys []string
	for i := range 40 {
		k := fmt.Sprintf("ck-%d", i)
		put(t, ctx, c.Nodes[0], k, []byte("v-"+k))
		keys = append(keys, k)
	}
	before := c.Nodes[0].Controller()
	waitUntil(t, 10*time.Second, "node 1 applied every key", func() bool {
		for _, k := range keys {
			v, _, err := c.Nodes[0].Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Local)
			if kv, _ := v.(*meta.KV); err != nil || kv == nil {
				return false
			}
		}
		return true
	})
	// Nodes 2 and 3 are lost for good; the survivors stop for the recovery.
	c.StopNode(1)
	c.StopNode(2)
	slotstoretest.StopAPI(api)
	c.StopNode(0)
	c.StopNode(3)

	status, err := cluster.RecoverController(ctx, c.Config(0), cluster.ControllerRecovery{})
	t.Logf("status of node 1: %+v", status)
	// What node 1 applied may be past the commit it saved (a commit-only
	// save is not synced): the entries past it are the tail the recovery
	// applies.
	if err != nil || status.Done != "status" || status.Commit == 0 || status.Applied != status.Commit || status.Last < before.AppliedIndex ||
		!slices.Equal(status.Voters, []slotstore.NodeID{1, 2, 3}) || !slices.Equal(status.NonVoting, []slotstore.NodeID{4}) {
		t.Fatalf("status: %+v, %v", status, err)
	}
	if _, err := cluster.RecoverController(ctx, c.Config(0), cluster.ControllerRecovery{AcceptDataLoss: true, Lost: []slotstore.NodeID{2}}); err == nil ||
		!strings.Contains(err.Error(), "not named lost") {
		t.Fatalf("a recovery while voters 1 and 3 would be a majority: %v", err)
	}
	rep, err := cluster.RecoverController(ctx, c.Config(0), cluster.ControllerRecovery{AcceptDataLoss: true, Lost: []slotstore.NodeID{2, 3}})
	if err != nil || rep.Done != "recovered" || rep.ID == "" {
		t.Fatalf("recovery on node 1: %+v, %v", rep, err)
	}
	if r, err := cluster.RecoverController(ctx, c.Config(3), cluster.ControllerRecovery{Rejoin: true, Base: 1, Lost: []slotstore.NodeID{2, 3}}); err != nil || r.Done != "rejoins" {
		t.Fatalf("node 4 rejoining: %+v, %v", r, err)
	}

	n1, err := c.TryStartNode(0)
	if err != nil {
		t.Fatalf("node 1 after the recovery: %v", err)
	}
	api = slotstoretest.ServeAPIAt(t, n1, c.APIAddr(0))
	defer slotstoretest.StopAPI(api)
	n4, err := c.TryStartNode(3)
	if err != nil {
		t.Fatalf("node 4 rejoining: %v", err)
	}
	for _, n := range []*cluster.Node{n1, n4} {
		waitUntil(t, 20*time.Second, fmt.Sprintf("node %d to see the recovery recorded", n.NodeID()), func() bool {
			st := n.Controller()
			_, ok := st.ControllerRecovered(rep.ID)
			return ok && n.ControllerLeader() == 1 && st.Nodes[2].State == controller.NodeRemoved && st.Nodes[3].State == controller.NodeRemoved
		})
	}
	after := n1.Controller()
	got, _ := after.ControllerRecovered(rep.ID)
	t.Logf("recorded: %+v", got)
	if got.Node != 1 || got.Index != rep.Commit || got.TailApplied != rep.Tail || !slices.Equal(got.Lost, []slotstore.NodeID{2, 3}) {
		t.Fatalf("recorded %+v for %+v", got, rep)
	}
	if after.AppliedIndex <= before.AppliedIndex || after.RouteRevision != before.RouteRevision || !slices.Equal(after.HashToGroup, before.HashToGroup) ||
		after.NextReplicaID != before.NextReplicaID || len(after.Groups) != len(before.Groups) || after.Nodes[4].State != controller.NodeActive {
		t.Fatalf("the recovered controller state differs from the committed one:\nbefore %+v\nafter %+v", before, after)
	}

	// The data groups lost their quorum too: each is recovered from node 1.
	for _, g := range after.GroupIDs() {
		r := recoverOnceLost(ctx, t, n1.Operator().Recovery(), g)
		if r.Node != 1 || r.MayBeLost {
			t.Fatalf("group %d's recovery: %+v", g, r)
		}
	}
	for _, k := range keys {
		waitUntil(t, 20*time.Second, "read "+k+" through node 4", func() bool {
			v, _, err := n4.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Linearizable)
			kv, _ := v.(*meta.KV)
			return err == nil && kv != nil && string(kv.Value) == "v-"+k
		})
	}
	waitUntil(t, 20*time.Second, "a write after the recovery", func() bool {
		res, _, err := n4.Propose(ctx, &meta.PutKV{Key: "after", Value: []byte("x")})
		return err == nil && res.OK()
	})

	// A lost node that comes back is refused.
	if n, err := c.TryStartNode(1); !errors.Is(err, cluster.ErrRemoved) {
		if n != nil {
			_ = n.Close()
		}
		t.Fatalf("node 2 came back: %v", err)
	}
	// Replicas move off the lost nodes: each group on nodes 1 and 4.
	for _, g := range after.GroupIDs() {
		moveReplica(ctx, t, n1, g, 2, 4)
		if got := slices.Sorted(maps.Keys(n1.Controller().Groups[g].Peers)); !slices.Equal(got, []slotstore.NodeID{1, 3, 4}) {
			t.Fatalf("group %d on %v", g, got)
		}
	}
	if l := n1.ControllerLeader(); l != 1 {
		t.Fatalf("the controller's leader is %d", l)
	}

	// The controller gets its voters back: node 5 joins, and the leader
	// promotes the non-voting members 4 and 5.
	c.Join(c.APIAddr(0))
	waitUntil(t, 20*time.Second, "three controller voters", func() bool {
		v, _, err := n1.Testing().ControllerMembers(ctx)
		return err == nil && slices.Equal(v, []slotstore.NodeID{1, 4, 5})
	})
	// Node 4 restarts with its promotion inside its snapshot (its role
	// file still says non-voting): it starts as the voter it is — with node
	// 5 stopped, nodes 1 and 4 are the controller's majority, and node 4
	// can lead it.
	if err := n4.Testing().SnapshotController(ctx); err != nil {
		t.Fatal(err)
	}
	c.Restart(3)
	c.StopNode(4)
	waitUntil(t, 20*time.Second, "node 4 to lead the controller", func() bool {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		defer acancel()
		return n1.Testing().TransferControllerLeader(actx, 4) == nil
	})
}
