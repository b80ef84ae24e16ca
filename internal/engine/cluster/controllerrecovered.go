package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// A node whose controller replica a recovery rewrote (controllerrecovery.go)
// finds controller-recovery.json in its data directory at start. From the
// start, before any Raft message is read, it drops the lost nodes' messages
// and refuses their peer requests: a lost voter that came back would
// otherwise lead the old membership's majority, at a higher term, over the
// recovered state. The base proposes RecoverController once it leads; a
// rejoining node registers through the base and follows as a new
// non-voting member. The record is kept: the lost nodes stay fenced (the
// recovered state removes them too).

// controllerRecord is controller-recovery.json.
type controllerRecord struct {
	// ID is the recovery's (the base's record only).
	ID string `json:"id,omitempty"`
	// Rejoin: this node rejoins the controller group through JoinVia, the
	// API address of Node, the base.
	Rejoin  bool               `json:"rejoin,omitempty"`
	JoinVia string             `json:"join_via,omitempty"`
	Node    slotstore.NodeID   `json:"node"`
	Index   uint64             `json:"index"`
	Term    uint64             `json:"term"`
	Lost    []slotstore.NodeID `json:"lost"`
	// LostRaftAddrs are the lost nodes' Raft addresses (fenced).
	LostRaftAddrs []string `json:"lost_raft_addrs"`
	// Tail are the commands the base logged past Index.
	Tail [][]byte `json:"tail,omitempty"`
	AtMs int64    `json:"at_ms"`
}

func writeControllerRecord(dir string, rec controllerRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := backup.WriteFile(dir, controllerRecoveryFile, b); err != nil {
		return fmt.Errorf("cluster: write %s: %w", controllerRecoveryFile, err)
	}
	return nil
}

// readControllerRecord reads the data directory's record, if any.
func readControllerRecord(dir string) (*controllerRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, controllerRecoveryFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read %s: %w", controllerRecoveryFile, err)
	}
	var rec controllerRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", controllerRecoveryFile, err)
	}
	if rec.Node == 0 || len(rec.Lost) == 0 || len(rec.Lost) != len(rec.LostRaftAddrs) || rec.Rejoin == (rec.ID != "") {
		return nil, fmt.Errorf("cluster: %s is not a recovery's record", controllerRecoveryFile)
	}
	return &rec, nil
}

// fenced reports whether the recovery (nil: none) named id lost.
func (rec *controllerRecord) fenced(id slotstore.NodeID) bool {
	return rec != nil && slices.Contains(rec.Lost, id)
}

// recordControllerRecovery proposes the base's recovery until the
// controller's state has it (or the node stops). A refusal is logged and
// ends it: the record is malformed.
func (r controllerReplica) recordControllerRecovery(rec *controllerRecord) {
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
