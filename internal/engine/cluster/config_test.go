package cluster_test

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
)

func TestDefaultGroupCount(t *testing.T) {
	for _, tc := range []struct{ members, rf, want int }{
		{0, 3, 1}, // no founding list: a joining node
		{1, 3, 1}, // make run
		{2, 3, 1},
		{3, 3, 1}, // the 3-node script: one group, one replica per node
		{5, 3, 1},
		{6, 3, 2},
		{9, 3, 3},
		{4, 1, 4}, // one replica per group: one group per node
		{5, 5, 1},
		{1000, 1, 256}, // never more groups than hash slots
	} {
		if got := cluster.DefaultGroupCount(tc.members, tc.rf); got != tc.want {
			t.Errorf("DefaultGroupCount(%d members, rf %d) = %d, want %d", tc.members, tc.rf, got, tc.want)
		}
	}
	cfg := cluster.Config{InitialMembers: make([]controller.Node, 6)}
	cfg.EnsureDefaults()
	if cfg.GroupCount != 2 || cfg.ReplicationFactor != 3 {
		t.Errorf("6 founding nodes at the defaults: %d groups, rf %d; want 2 groups, rf 3", cfg.GroupCount, cfg.ReplicationFactor)
	}
}
