package cluster

import (
	"context"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/ctrlrecovery"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// A node whose controller replica a recovery rewrote (package
// ctrlrecovery) finds its record at start: it fences the lost nodes
// from the start (nodes.go), and the base proposes the recovery once it
// leads.

// recordControllerRecovery proposes the base's recovery until the
// controller's state has it (or the node stops). A refusal is logged and
// ends it: the record is malformed.
func (r controllerReplica) recordControllerRecovery(rec *ctrlrecovery.Record) {
	cmd := controller.Command{RecoverController: &controller.RecoverController{ID: rec.ID, Node: rec.Node, Index: rec.Index,
		Term: rec.Term, Lost: rec.Lost, Tail: rec.Tail}}
	for {
		if got, ok := r.n.ctrl.Load().ControllerRecovered(rec.ID); ok {
			r.n.cfg.Logger.Info("the controller's recovery is recorded", "id", got.ID, "index", got.Index,
				"tail_applied", got.TailApplied, "tail_refused", got.TailRefused, "lost", got.Lost)
			return
		}
		if r.leader() == r.n.cfg.NodeID {
			ctx, cancel := context.WithTimeout(r.n.life, r.n.cfg.RequestTimeout)
			_, err := r.proposeControllerResult(ctx, cmd)
			cancel()
			if code := slotstore.ErrorCode(err); err != nil && code == slotstore.CodeInvalidArgument {
				r.n.cfg.Logger.Error("the controller's recovery was refused", "id", rec.ID, "err", err)
				return
			}
		}
		select {
		case <-r.n.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
