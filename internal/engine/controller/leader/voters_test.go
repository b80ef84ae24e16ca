package leader

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestKeepControllerVoters: with one voter left (a controller recovered
// from one survivor), the leader promotes, one per round, the lowest
// active non-voting member that reports — not a draining one, not one it
// has not heard from — and logs each promotion; at three voters it stops.
// It promotes none when too few could be to reach three.
func TestKeepControllerVoters(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	host := newFakeHost(1, clock)
	ctx := context.Background()
	nodes := []controller.Node{{ID: 1, RaftAddr: "a1"}, {ID: 2, RaftAddr: "a2"}, {ID: 3, RaftAddr: "a3"}, {ID: 4, RaftAddr: "a4"}, {ID: 5, RaftAddr: "a5"}}
	for _, c := range []controller.Command{
		{Bootstrap: &controller.Bootstrap{ClusterID: "c", GroupCount: 1, ReplicationFactor: 1, Nodes: nodes}},
		{DrainNode: &controller.DrainNode{ID: 2}},
	} {
		if _, err := host.Propose(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	host.voters, host.learners = []slotstore.NodeID{1}, []slotstore.NodeID{2, 3, 4, 5}
	leadership := policy.Leadership{}
	leadership.EnsureDefaults()
	l := New(Config{NodeID: 1, Host: host, Peers: noPeers{}, Now: clock, Life: ctx, ObserveInterval: -1,
		RequestTimeout: time.Second, UnreachableAfter: 3 * time.Second, Leadership: leadership})
	l.obs.Lead(now)
	for _, id := range []slotstore.NodeID{1, 2, 4, 5} { // node 3 never reported
		l.obs.Record(id, slotstore.NodeStatus{Node: id}, now)
	}
	l.KeepControllerVoters(ctx, now)
	l.KeepControllerVoters(ctx, now)
	l.KeepControllerVoters(ctx, now)
	if want := []slotstore.NodeID{1, 4, 5}; !slices.Equal(host.voters, want) {
		t.Fatalf("voters %v, want %v (learners %v)", host.voters, want, host.learners)
	}
	var logged []string
	for _, d := range host.Controller().Decisions {
		if d.Kind == slotstore.DecisionControllerVoter {
			logged = append(logged, d.Detail)
		}
	}
	if len(logged) != 2 {
		t.Fatalf("promotions logged: %q", logged)
	}

	// One voter and one eligible member: two voters would be no safer and
	// less available than one; nothing is promoted.
	host.voters, host.learners = []slotstore.NodeID{1}, []slotstore.NodeID{3, 4}
	l.KeepControllerVoters(ctx, now)
	if !slices.Equal(host.voters, []slotstore.NodeID{1}) {
		t.Fatalf("voters %v: promoted toward an even count", host.voters)
	}
}
