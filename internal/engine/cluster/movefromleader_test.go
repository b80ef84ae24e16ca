package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestReplicaMoveOffTheLeader: moving the replica of the group's leader.
// Before removing the old voter the move hands the leadership to the new
// replica, which is a voter by then but not yet a desired peer (that is the
// commit); the transfer must find its replica id through the task. (Found
// by internal/chaos: the transfer was refused as "not a desired peer", so
// the phase failed and every resume failed the same way.)
func TestReplicaMoveOffTheLeader(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 4, Groups: 1, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.TaskPhaseTimeout = 10 * time.Second
	}})
	const g = slotstore.GroupID(1)
	n := c.Nodes[0]
	var from slotstore.NodeID
	waitUntil(t, 10*time.Second, "a leader of group 1", func() bool {
		st, ok := n.Routes().Group(g)
		from = st.Leader
		return ok && from != 0
	})
	var to slotstore.NodeID
	for i := 1; i <= len(c.Nodes); i++ {
		if _, ok := n.Controller().Groups[g].Peers[slotstore.NodeID(i)]; !ok {
			to = slotstore.NodeID(i)
		}
	}
	if from == 0 || to == 0 {
		t.Fatalf("leader n%d, free node n%d", from, to)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	task := moveReplica(ctx, t, n, g, from, to)
	peers := n.Controller().Groups[g].Peers
	if _, ok := peers[from]; ok {
		t.Fatalf("n%d is still a desired peer: %v", from, peers)
	}
	if peers[to] != task.NewReplicaID {
		t.Fatalf("n%d is not a desired peer with replica %d: %v", to, task.NewReplicaID, peers)
	}
}
