package operatortest

import (
	"context"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// history is the fake node's slotstore.History: its Histories and Heat
// fields, read under its lock; the heat map fails without a controller
// leader, as a node's does.
type history struct{ f *Fake }

// History returns the fake's histories.
func (f *Fake) History() slotstore.History { return history{f} }

func (h history) Node(_ context.Context, id slotstore.NodeID) (slotstore.NodeHistory, error) {
	h.f.Record(fmt.Sprintf("History %d", id))
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	nh, ok := h.f.Histories[id]
	if !ok {
		return nh, slotstore.Errorf(slotstore.CodeNotFound, "node %d has no history", id)
	}
	return nh, nil
}

func (h history) Heat(context.Context) (slotstore.SlotHeat, error) {
	h.f.Record("Heat")
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if h.f.NoControllerLeader {
		return slotstore.SlotHeat{}, errNoControllerLeader
	}
	return h.f.Heat, nil
}
