package raftlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/lni/dragonboat/v4/config"
)

// Raft workers. dragonboat runs the Raft step of its groups on ExecShards
// worker goroutines (group g on worker g mod ExecShards) and keeps the log in
// LogDB.Shards Pebble instances. Each worker saves the Raft state of all the
// groups it stepped in one write, so groups that share a worker share one log
// fsync per round: with one worker per group (dragonboat's default of 16)
// every group pays its own fdatasync per entry on every replica, which was
// the largest single cost of a write on a small machine (bench/README.md).
//
// One worker per four cores (at least one, at most eight) is the default:
// with many groups the shared fsync is worth more than parallel stepping —
// on 2 cores, 64 groups wrote 19 % more with one worker than with two, one
// group the same (bench/README.md, "Many groups") — while a large host keeps
// some parallelism.
//
// dragonboat refuses to open a log written with different counts, so the
// count is chosen when a node's data directory is created and kept beside
// it (raft-workers). A directory created before the file existed used
// dragonboat's defaults (16).
const (
	raftWorkersFile   = "raft-workers"
	legacyRaftWorkers = 16
	MaxWorkers        = 64 // the most a data directory may be created with
)

// DefaultWorkers is the worker count of a new data directory when none is
// configured: one per four cores, 1..8.
func DefaultWorkers() int { return min(max(runtime.NumCPU()/4, 1), 8) }

// ResolveWorkers returns the worker count to run with: the one the data
// directory was created with, or for a new directory the configured one (or
// the default), which it records. A configured count that differs from the
// directory's is refused rather than ignored.
func ResolveWorkers(dataDir string, configured int) (int, error) {
	p := filepath.Join(dataDir, raftWorkersFile)
	b, err := os.ReadFile(p)
	switch {
	case err == nil:
		have, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if perr != nil || have < 1 || have > MaxWorkers {
			return 0, fmt.Errorf("raftlog: unreadable raft worker count %q in %s", strings.TrimSpace(string(b)), p)
		}
		if configured != 0 && configured != have {
			return 0, fmt.Errorf("raftlog: the data directory was created with %d raft workers, %d configured: the count cannot change after the first start", have, configured)
		}
		return have, nil
	case !errors.Is(err, os.ErrNotExist):
		return 0, fmt.Errorf("raftlog: read raft worker count: %w", err)
	}
	want := configured
	if want == 0 {
		want = DefaultWorkers()
	}
	if entries, _ := os.ReadDir(filepath.Join(dataDir, "raft")); len(entries) > 0 {
		// A log written before the count was recorded: dragonboat's defaults.
		if configured != 0 && configured != legacyRaftWorkers {
			return 0, fmt.Errorf("raftlog: the data directory predates %s and uses %d raft workers, %d configured", raftWorkersFile, legacyRaftWorkers, configured)
		}
		want = legacyRaftWorkers
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(want)+"\n"), 0o644); err != nil {
		return 0, fmt.Errorf("raftlog: record raft worker count: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return 0, fmt.Errorf("raftlog: record raft worker count: %w", err)
	}
	return want, nil
}

// ExpertConfig is dragonboat's engine and LogDB configuration for workers:
// the tiny LogDB preset (dragonboat.md §2: 4 MiB write buffers per shard),
// one LogDB shard per step worker, applyWorkers commit and apply workers
// each (0: the engine's 16), the other stages at their defaults; the
// LogDB is dragonboat's default without an fsync for commit-only saves
// (logdb.go, ADR 0006).
func ExpertConfig(workers, applyWorkers int, logdb *Factory) config.ExpertConfig {
	logcfg := config.GetTinyMemLogDBConfig()
	logcfg.Shards = uint64(workers)
	engine := config.GetDefaultEngineConfig()
	engine.ExecShards = uint64(workers)
	if applyWorkers > 0 {
		engine.CommitShards, engine.ApplyShards = uint64(applyWorkers), uint64(applyWorkers)
	}
	return config.ExpertConfig{LogDB: logcfg, Engine: engine, LogDBFactory: logdb}
}
