package cluster

import (
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestLeaseLimit: the lease of a group is bounded by the shortest timing
// among its replicas — the targets of its running replica moves included —
// and there is none while one of them has not reported.
func TestLeaseLimit(t *testing.T) {
	def := controller.TimingOf(50*time.Millisecond, 10)
	short := controller.TimingOf(20*time.Millisecond, 10)
	st := controller.NewState()
	st.Groups[1] = &controller.Group{ID: 1, Peers: map[slotstore.NodeID]uint64{1: 1, 2: 2, 3: 3}}
	st.Timing = map[slotstore.NodeID]controller.RaftTiming{1: def, 2: def}
	if got := leaseLimit(st, 1); got != 0 {
		t.Fatalf("node 3 has not reported, yet the limit is %v", got)
	}
	st.Timing[3] = def
	if got, want := leaseLimit(st, 1), propose.LeaseDuration(50*time.Millisecond, 10); got != want {
		t.Fatalf("limit %v, want %v", got, want)
	}
	st.Tasks = map[uint64]*controller.Task{7: {ID: 7, Kind: controller.TaskReplicaMove, Group: 1, From: 3, To: 4, Status: controller.TaskRunning}}
	if got := leaseLimit(st, 1); got != 0 {
		t.Fatalf("a move's target without timing, yet the limit is %v", got)
	}
	st.Timing[4] = short
	if got, want := leaseLimit(st, 1), propose.LeaseDuration(20*time.Millisecond, 10); got != want {
		t.Fatalf("limit %v with a shorter target, want %v", got, want)
	}
	if got := leaseLimit(st, 2); got != 0 {
		t.Fatalf("an unknown group's limit is %v", got)
	}
}
