package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lni/dragonboat/v4/config"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/ctrlrecovery"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/engine/raftnet"
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
