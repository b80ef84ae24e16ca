package cluster_test

import (
	"testing"
	"time"

	"slotmeta/internal/slotstore/cluster"
	"slotmeta/internal/slotstore/slotstoretest"
)

// TestRaftLogSyncsOncePerWrite: one write at a time on 3 nodes costs each
// replica one log fsync — for the entry — and not a second one for the
// commit index that follows it (dragonboat's own LogDB syncs both: 2.0
// per write on the leader).
func TestRaftLogSyncsOncePerWrite(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1, Faults: true,
		Tune: func(cfg *cluster.Config) { cfg.ObserveInterval = -1; cfg.ProjectInterval = -1 }})
	w := newWrites(t, c)
	var leader *cluster.Node
	waitUntil(t, 10*time.Second, "a leader of the group", func() bool {
		id := leaderOf(c.Nodes[0])
		if id == 0 {
			return false
		}
		leader = c.Nodes[id-1]
		return true
	})
	w.mustPut(leader, 5*time.Second)
	before := make([]uint64, len(c.Nodes))
	for i := range c.Nodes {
		c.Disk(i).SetSyncDelay(time.Nanosecond) // counts every sync
		before[i] = c.Disk(i).DelayedSyncs()
	}
	const writes = 200
	for range writes {
		w.mustPut(leader, 5*time.Second)
	}
	for i := range c.Nodes {
		per := float64(c.Disk(i).DelayedSyncs()-before[i]) / writes
		t.Logf("node %d: %.2f syncs per write", i+1, per)
		if per > 1.25 {
			t.Errorf("node %d synced %.2f times per write, want about 1", i+1, per)
		}
	}
}
