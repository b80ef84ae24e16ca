package cluster

import (
	"context"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/controller"
)

// RequestSnapshot makes n's replica of group g take a snapshot now and
// returns its index, for tests of package cluster_test.
func (n *Node) RequestSnapshot(ctx context.Context, g slotstore.GroupID) (uint64, error) {
	return n.nh.SyncRequestSnapshot(ctx, controller.ShardOf(g), dragonboat.SnapshotOption{})
}
