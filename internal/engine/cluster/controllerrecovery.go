package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lni/dragonboat/v4/config"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/ctrlrecovery"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/engine/raftnet"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// ControllerRecovery says what RecoverController does (package
// ctrlrecovery, which runs it).
type ControllerRecovery = ctrlrecovery.Options

// ControllerRecoveryReport is what RecoverController found and did.
type ControllerRecoveryReport = ctrlrecovery.Report

// RecoverController runs o on the stopped node cfg configures, over a
// NodeHost of its data directory that neither listens nor sends.
func RecoverController(ctx context.Context, cfg Config, o ControllerRecovery) (ControllerRecoveryReport, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return ControllerRecoveryReport{}, err
	}
	if _, err := readRestoreSeed(&cfg); err != nil {
		return ControllerRecoveryReport{}, err
	}
	if err := o.Check(cfg.NodeID); err != nil {
		return ControllerRecoveryReport{}, err
	}
	quietDragonboat() // as a node: its report, not the engine's lines
	raftDir := filepath.Join(cfg.DataDir, "raft")
	if _, err := os.Stat(raftDir); err != nil {
		return ControllerRecoveryReport{}, fmt.Errorf("cluster: no Raft data in %s: %w", cfg.DataDir, err)
	}
	workers, err := raftlog.ResolveWorkers(cfg.DataDir, cfg.RaftWorkers)
	if err != nil {
		return ControllerRecoveryReport{}, err
	}
	logdb := &raftlog.Factory{}
	nhc := nodeHostConfig(&cfg, raftDir, workers, logdb)
	nhc.Expert.TransportFactory = raftnet.Silent{}
	return ctrlrecovery.Run(ctx, ctrlrecovery.Config{DataDir: cfg.DataDir, NodeID: cfg.NodeID, RaftAddr: cfg.RaftAddr,
		NodeHost: nhc, LogDB: logdb, Shard: func(nonVoting bool) config.Config {
			scfg := shardConfig(&cfg, controller.ShardID, uint64(cfg.NodeID))
			scfg.IsNonVoting = nonVoting
			return scfg
		}}, o)
}

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
