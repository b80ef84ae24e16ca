package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestRoutesFollowTheControllerWhileReplicasAreBusy holds the reconcile loop
// (as a round that stops a replica can, for seconds) and moves a hash slot:
// the node's router serves the new table as soon as its controller replica
// applied the switch — routing does not wait for the replicas to follow.
// (make chaos found a node routing by a table two seconds older than its own
// controller state while it stopped a replica.)
func TestRoutesFollowTheControllerWhileReplicasAreBusy(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), freeAddr(t))
	cfg.GroupCount = 2
	cfg.ObserveInterval = -1 // tasks stepped by the test
	n := startNode(t, cfg)
	defer n.Close()
	testutil.WaitUntil(t, 5*time.Second, 10*time.Millisecond, "the node leads the controller", func() bool { return n.ControllerLeader() == n.NodeID() })
	gate := make(chan struct{})
	n.followGate.Store(&gate)
	defer close(gate)

	hs := n.Routes().Table().SlotsOf(1)[0]
	before := n.Routes().Table().Revision()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	task, err := n.Operator().CreateSlotMigration(ctx, hs, 2)
	if err != nil {
		t.Fatal(err)
	}
	for {
		got, err := n.Operator().Task(task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == controller.TaskSucceeded {
			break
		}
		if got.Status == controller.TaskFailed || got.Status == controller.TaskCancelled || ctx.Err() != nil {
			t.Fatalf("migration did not finish: %+v", got)
		}
		n.Testing().Leader().TasksOnce(ctx)
	}
	st := n.Controller()
	tbl := n.Routes().Table()
	if st.RouteRevision <= before || tbl.Revision() != st.RouteRevision {
		t.Fatalf("router at revision %d, controller at %d (was %d)", tbl.Revision(), st.RouteRevision, before)
	}
	if g := tbl.Group(hs); g != slotstore.GroupID(2) {
		t.Fatalf("hash slot %d routed to group %d after its move to group 2", hs, g)
	}
}
