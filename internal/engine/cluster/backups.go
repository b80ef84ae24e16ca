package cluster

import (
	"context"
	"fmt"
	"io"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/engine/replicas"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// backupHost is the node as its backups see it (backupjob.Host).
type backupHost struct {
	self     slotstore.NodeID
	nh       *dragonboat.NodeHost
	replicas *replicas.Set
	router   *routing.Router
	peerAddr func(slotstore.NodeID) string
}

func (h backupHost) NodeID() slotstore.NodeID { return h.self }

// ControllerState reads the controller's state linearizably through this
// node's replica of the controller (every node runs one).
func (h backupHost) ControllerState(ctx context.Context) (*controller.State, error) {
	v, err := h.nh.SyncRead(ctx, controller.ShardID, controller.StateQuery{})
	if err != nil {
		return nil, propose.RaftError(err, 0, false)
	}
	st, ok := v.(*controller.State)
	if !ok {
		return nil, fmt.Errorf("the controller state query answered %T", v)
	}
	return st, nil
}

func (h backupHost) HasReplica(g slotstore.GroupID) bool { return h.replicas.Get(g).Open() }

// LocalImage writes the image of this node's replica of g once a read
// round has made it current: every write acknowledged before the call is
// in it.
func (h backupHost) LocalImage(ctx context.Context, g slotstore.GroupID, w io.Writer) (fsm.ImageInfo, error) {
	r := h.replicas.Get(g)
	if !r.Open() {
		return fsm.ImageInfo{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "node %d holds no replica of group %d", h.self, g)
	}
	if err := r.AwaitRead(ctx); err != nil {
		return fsm.ImageInfo{}, err
	}
	return r.SM().WriteImage(w, ctx.Done())
}

func (h backupHost) Leader(g slotstore.GroupID) slotstore.NodeID {
	st, _ := h.router.Load().Group(g)
	return st.Leader
}

func (h backupHost) PeerAddr(id slotstore.NodeID) string { return h.peerAddr(id) }

// backupHostOf is n as its backups see it.
func backupHostOf(n *Node) backupHost {
	return backupHost{self: n.cfg.NodeID, nh: n.nh, replicas: n.replicas, router: n.router, peerAddr: n.dispatch.PeerAddrOf}
}
