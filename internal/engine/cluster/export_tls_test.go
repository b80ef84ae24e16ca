package cluster

import "context"

// PeerLeaders calls GET /peer/v1/leaders on the node at addr with n's own
// peer client, so that tests of package cluster_test can reach peer RPC.
func (n *Node) PeerLeaders(ctx context.Context, addr string) error {
	_, err := n.peers.Leaders(ctx, addr)
	return err
}
