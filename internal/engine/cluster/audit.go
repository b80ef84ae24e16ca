package cluster

import (
	"context"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Audit records one admin action in the replicated audit trail (the
// controller's, bounded to controller.MaxAudit records) and returns its
// sequence number. The serving node is filled in.
func (n *Node) Audit(ctx context.Context, rec slotstore.AuditRecord) (uint64, error) {
	rec.Node = n.cfg.NodeID
	a := controller.AuditOf(rec)
	r, err := n.ctl.proposeControllerResult(ctx, controller.Command{Audit: &a})
	if err != nil {
		return 0, err
	}
	return r.TaskID, nil
}
