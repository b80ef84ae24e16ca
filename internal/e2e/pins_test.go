package e2e

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestManualActionsStayPut is "Must show 3" of issue 30: with the balancer
// running (every 200 ms) on four nodes and four groups, an operator splits
// group 1 (five groups where four are wanted: the balancer wants a merge)
// and moves a replica of group 2 onto a node that already holds three (the
// balancer wants a replica off it). Both actions pin their groups: the
// balancer's plan names none of them, and after its rounds the split's
// two groups and the moved replica are where the operator put them. The
// pins are listed, with why and until when, and released on request.
func TestManualActionsStayPut(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 4, Groups: 4, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.DisableBalancer = false
		cfg.BalanceInterval = 200 * time.Millisecond
		cfg.TaskPhaseTimeout = 20 * time.Second
	}})
	op := c.Nodes[0].Operator()
	// Calls the controller leader serves for another node carry their
	// deadline along: at most a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	done := func(id uint64) func() bool {
		return func() bool {
			task, err := op.Task(id)
			if err == nil && (task.Status == controller.TaskFailed || task.Status == controller.TaskCancelled) {
				t.Fatalf("task %d: %+v", id, task)
			}
			return err == nil && task.Status == controller.TaskSucceeded
		}
	}
	split, err := op.CreateSplit(ctx, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitUntil(t, 60*time.Second, 50*time.Millisecond, "the manual split", done(split.ID))
	child := split.ToGroup
	st := c.Nodes[0].Controller()
	peers := st.Groups[2].Peers
	var from, to slotstore.NodeID
	for _, n := range st.NodeIDs() {
		if _, holds := peers[n]; holds && from == 0 {
			from = n
		} else if !holds {
			to = n
		}
	}
	move, err := op.CreateReplicaMove(ctx, 2, from, to)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitUntil(t, 60*time.Second, 50*time.Millisecond, "the manual move", done(move.ID))
	moved := slices.Sorted(maps.Keys(c.Nodes[0].Controller().Groups[2].Peers))

	pinned := []slotstore.GroupID{1, 2, child}
	bal, err := op.Balancer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []slotstore.GroupID
	for _, p := range bal.Pins {
		if p.UntilMs <= time.Now().Add(50*time.Minute).UnixMilli() || p.Why == "" {
			t.Fatalf("pin %+v: an hour from its action, with why", p)
		}
		listed = append(listed, p.Group)
	}
	if slices.Sort(listed); !slices.Equal(listed, pinned) {
		t.Fatalf("pins %+v, want groups %v", bal.Pins, pinned)
	}
	plan, err := op.BalancerPlan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range plan.Actions {
		if slices.Contains(pinned, a.Group) || slices.Contains(pinned, a.ToGroup) {
			t.Fatalf("the balancer plans %+v on a pinned group", a)
		}
	}
	// Three more rounds of the balancer, from now.
	since := time.Now().UnixMilli()
	testutil.WaitUntil(t, 10*time.Second, 50*time.Millisecond, "three balancer rounds", func() bool {
		b, err := op.Balancer(ctx)
		return err == nil && b.LastRoundAtMs >= since+3*200
	})
	now := c.Nodes[0].Controller()
	if _, ok := now.Groups[child]; !ok {
		t.Fatalf("the split's new group %d is gone", child)
	}
	if _, ok := now.Groups[1]; !ok {
		t.Fatal("group 1 is gone")
	}
	if got := slices.Sorted(maps.Keys(now.Groups[2].Peers)); !slices.Equal(got, moved) {
		t.Fatalf("group 2 on %v, moved by hand to %v", got, moved)
	}
	for _, id := range now.TaskIDs() {
		if task := now.Tasks[id]; id != split.ID && id != move.ID && (slices.Contains(pinned, task.Group) || slices.Contains(pinned, task.ToGroup)) {
			t.Fatalf("task %+v works on a pinned group", task)
		}
	}
	if err := op.SetBalancer(ctx, slotstore.BalancerChange{ReleasePins: pinned}); err != nil {
		t.Fatal(err)
	}
	// The controller leader answers: it may apply the release a moment
	// after this node did.
	testutil.WaitUntil(t, 10*time.Second, 20*time.Millisecond, "no pins after the release", func() bool {
		b, err := op.Balancer(ctx)
		return err == nil && len(b.Pins) == 0
	})
}
