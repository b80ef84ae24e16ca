package raftlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaftWorkersAreFixedAtCreation: a new data directory records the
// configured (or default) count; a restart takes the recorded one; a
// different configured count is refused, never silently ignored; a directory
// written before the record existed keeps dragonboat's old default.
func TestRaftWorkersAreFixedAtCreation(t *testing.T) {
	dir := t.TempDir()
	if w, err := ResolveWorkers(dir, 0); err != nil || w != DefaultWorkers() {
		t.Fatalf("new dir, default: %d %v", w, err)
	}
	if w, err := ResolveWorkers(dir, 0); err != nil || w != DefaultWorkers() {
		t.Fatalf("restart: %d %v", w, err)
	}
	if w, err := ResolveWorkers(dir, DefaultWorkers()); err != nil || w != DefaultWorkers() {
		t.Fatalf("restart with the same count: %d %v", w, err)
	}
	if _, err := ResolveWorkers(dir, 4); err == nil || !strings.Contains(err.Error(), "cannot change") {
		t.Fatalf("a changed count: %v", err)
	}

	configured := t.TempDir()
	if w, err := ResolveWorkers(configured, 4); err != nil || w != 4 {
		t.Fatalf("new dir, 4 configured: %d %v", w, err)
	}
	if w, err := ResolveWorkers(configured, 0); err != nil || w != 4 {
		t.Fatalf("restart of a 4-worker dir: %d %v", w, err)
	}

	legacy := t.TempDir()
	if err := os.MkdirAll(filepath.Join(legacy, "raft", "nodehost"), 0o755); err != nil {
		t.Fatal(err)
	}
	if w, err := ResolveWorkers(legacy, 0); err != nil || w != legacyRaftWorkers {
		t.Fatalf("legacy dir: %d %v", w, err)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, raftWorkersFile), []byte("many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveWorkers(bad, 0); err == nil {
		t.Fatal("an unreadable record was accepted")
	}
}

// TestExpertConfigSharesLogShards: groups on one step worker save through
// one LogDB shard; the commit and apply workers are as many as asked.
func TestExpertConfigSharesLogShards(t *testing.T) {
	e := ExpertConfig(2, 4, &Factory{})
	if e.Engine.ExecShards != 2 || e.LogDB.Shards != 2 || e.Engine.CommitShards != 4 || e.Engine.ApplyShards != 4 {
		t.Fatalf("exec %d, logdb %d, commit %d, apply %d", e.Engine.ExecShards, e.LogDB.Shards, e.Engine.CommitShards, e.Engine.ApplyShards)
	}
	if err := e.Engine.Validate(); err != nil {
		t.Fatal(err)
	}
	if mb := e.LogDB.MemorySizeMB(); mb > 64 {
		t.Fatalf("LogDB memory bound %d MiB", mb)
	}
}
