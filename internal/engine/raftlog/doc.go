// Package raftlog is a node's Raft log: how dragonboat stores Raft entries
// and state for every replica on the node, how many step workers share it,
// and how much memory each replica's queues and in-memory log take.
//
// Model. The log is dragonboat's own default LogDB (sharded Pebble, the
// pinned Pebble of dragonboat, never our store's) behind Factory, which
// defers a state save that only moves a replica's commit index to that
// replica's next save that must be synced anyway (ADR 0006): the commit
// index is volatile Raft state, so one fsync per write round is enough.
// After a crash a commit below the latest snapshot is raised to it. The
// step workers and log shards (ResolveWorkers, ExpertConfig) are few and
// fixed when a data directory is created: groups stepped by one worker share
// one log fsync per round (ADR 0003, ADR 0008). The per-replica sizes
// (sizes.go) are dragonboat's process-wide variables, set once when this
// package initialises, before any NodeHost exists (ADR 0008).
//
// Concurrency contract. dragonboat calls the log from several step workers
// at once (never two calls with the same worker id); the wrapper's maps are
// guarded by one mutex and its counters are atomic. ResolveWorkers touches
// the data directory and runs once, before the NodeHost starts.
//
// The default LogDB's constructor and the size variables are linked by
// name (go:linkname) in the pinned dragonboat version; tests check their
// signatures and types, and an upgrade must check them.
package raftlog
