package cluster_test

import (
	"context"
	"testing"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/cluster"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/slotstoretest"
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
	for wait := time.Now().Add(10 * time.Second); from == 0 && time.Now().Before(wait); {
		if st, ok := n.Routes().Group(g); ok && st.Leader != 0 {
			from = st.Leader
		} else {
			time.Sleep(20 * time.Millisecond) // polling with a deadline
		}
	}
	var to slotstore.NodeID
	for i := 1; i <= len(c.Nodes); i++ {
		if _, ok := n.Controller().Groups[g].Peers[slotstore.NodeID(i)]; !ok {
			to = slotstore.NodeID(i)
		}
	}
	if from == 0 || to == 0 {
		t.Fatalf("leader n%d, free node n%d", from, to)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	task, err := n.CreateReplicaMove(ctx, g, from, to)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for task.Status == controller.TaskRunning {
		if time.Now().After(deadline) {
			t.Fatalf("the move did not end: %+v", task)
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline
		task, _ = n.Task(task.ID)
	}
	if task.Status != controller.TaskSucceeded {
		t.Fatalf("moving the leader's replica n%d→n%d: %s at %s: %s", from, to, task.Status, task.Phase, task.Error)
	}
	peers := n.Controller().Groups[g].Peers
	if _, ok := peers[from]; ok {
		t.Fatalf("n%d is still a desired peer: %v", from, peers)
	}
	if peers[to] != task.NewReplicaID {
		t.Fatalf("n%d is not a desired peer with replica %d: %v", to, task.NewReplicaID, peers)
	}
}
