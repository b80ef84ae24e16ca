package cluster

import (
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// RawLeaderTransfer asks dragonboat itself to move group g's leadership to
// node target — none of the node's gates — for tests of package
// cluster_test that need a transfer Raft cannot finish.
func (n *Node) RawLeaderTransfer(g slotstore.GroupID, target slotstore.NodeID) error {
	replica, _ := n.ctrl.Load().Groups[g].Peers[target]
	return n.nh.RequestLeaderTransfer(controller.ShardOf(g), replica)
}

// HeardAgoMs is how long ago n last received a Raft message from node
// target's replica of g (-1: never), for tests.
func (n *Node) HeardAgoMs(g slotstore.GroupID, target slotstore.NodeID) int64 {
	replica := n.ctrl.Load().Groups[g].Peers[target]
	if ago, ok := n.heard.Ago(controller.ShardOf(g), replica); ok {
		return ago.Milliseconds()
	}
	return -1
}
