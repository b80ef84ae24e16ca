package cluster

import (
	"context"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// RequestSnapshot makes n's replica of group g take a snapshot now and
// returns its index, for tests of package cluster_test.
func (n *Node) RequestSnapshot(ctx context.Context, g slotstore.GroupID) (uint64, error) {
	return n.nh.SyncRequestSnapshot(ctx, controller.ShardOf(g), dragonboat.SnapshotOption{})
}

// PrepareRecovery prepares n's replica old of group g for a recovery as
// replica next (replicas.Set.PrepareRecovery), for tests of package
// cluster_test: an attempt that prepared the survivor and was never
// recorded.
func (n *Node) PrepareRecovery(ctx context.Context, g slotstore.GroupID, old, next uint64) error {
	_, err := n.replicas.PrepareRecovery(ctx, g, old, next, 1)
	return err
}
