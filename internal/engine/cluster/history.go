package cluster

import (
	"context"

	"github.com/slotmeta/slotmeta/internal/engine/controller/leader"
	"github.com/slotmeta/slotmeta/internal/engine/history"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// histories are the node's slotstore.History: its own recorder, other
// nodes' asked over the peer port, the heat map from the controller leader.
type histories struct {
	self   slotstore.NodeID
	rec    *history.Recorder
	peers  *peer.Client
	addr   func(slotstore.NodeID) string
	leader *leader.Leader
}

func (h histories) Node(ctx context.Context, id slotstore.NodeID) (slotstore.NodeHistory, error) {
	if id == h.self {
		return h.rec.History(), nil
	}
	addr := h.addr(id)
	if addr == "" {
		return slotstore.NodeHistory{}, slotstore.Errorf(slotstore.CodeNotFound, "node %d is not registered", id)
	}
	return history.Ask(ctx, h.peers, addr)
}

func (h histories) Heat(ctx context.Context) (slotstore.SlotHeat, error) { return h.leader.Heat(ctx) }
