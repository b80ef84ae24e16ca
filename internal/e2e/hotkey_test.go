package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestOneHotKeyIsNamedNotChased (issue 54, item 3): on three nodes and
// three groups with the balancer on (every 200 ms), one key takes every
// write. The balancer's plan names its hash slot as too hot for any group,
// holds with a hot_slot decision, and moves no hash slot — before, it moved
// the group's cold slots away one by one, which lowered the skew by
// nothing (13 moves in 98 s on a real cluster).
func TestOneHotKeyIsNamedNotChased(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 3, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.DisableBalancer = false
		cfg.BalanceInterval = 200 * time.Millisecond
		cfg.HistoryStep = 500 * time.Millisecond
		cfg.Balancer.MinLoad = 5 // the writer's rate on a loaded machine under -race
	}})
	op := c.Nodes[0].Operator()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const key = "the-hot-key"
	slot := slotstore.HashSlotOfString(key)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the hot key's writer, through every node in turn
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _, _ = c.Nodes[i%3].Propose(ctx, &meta.PutKV{Key: key, Value: []byte("v")})
		}
	}()
	defer func() { close(stop); <-done }()

	var plan slotstore.BalancePlan
	testutil.WaitFor(t, 40*time.Second, 100*time.Millisecond, func() (bool, string) {
		var err error
		plan, err = op.BalancerPlan(ctx)
		return err == nil && plan.HeldReason == "hot_slot" && len(plan.Hot) == 1 && plan.Hot[0].Slot == slot, fmt.Sprintf("%+v %v", plan, err)
	})
	if plan.Hot[0].OfMean < 2 || len(plan.Actions) != 0 {
		t.Fatalf("the plan: %+v", plan)
	}
	testutil.WaitUntil(t, 20*time.Second, 100*time.Millisecond, "a hot_slot decision", func() bool {
		return slices.ContainsFunc(op.Decisions(), func(d slotstore.Decision) bool {
			return d.Kind == slotstore.DecisionBalanceHeld && d.Reason == "hot_slot"
		})
	})
	// Ten balancer rounds (200 ms apart) after the hold: none moved a slot.
	st, err := op.Balancer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from := st.LastRoundAtMs
	testutil.WaitFor(t, 20*time.Second, 100*time.Millisecond, func() (bool, string) {
		st, err = op.Balancer(ctx)
		return err == nil && st.LastRoundAtMs >= from+2000, fmt.Sprintf("last round at %d, from %d: %v", st.LastRoundAtMs, from, err)
	})
	for _, task := range c.Nodes[0].Controller().Tasks {
		if task.Kind == controller.TaskSlotMigration {
			t.Fatalf("the balancer moved a hash slot: %+v", task)
		}
	}
	t.Logf("hash slot %d named: %.0f ops/s, %.1f× the mean group load", slot, plan.Hot[0].OpsPerSec, plan.Hot[0].OfMean)
}
