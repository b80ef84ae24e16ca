// Package propose moves commands and reads of one slot group through Raft
// on one node: the proposer that coalesces commands into Raft entries, the
// batcher that shares ReadIndex rounds among linearizable reads, and their
// adapters to dragonboat.
//
// Model. A Proposer owns a bounded queue per group and turns the commands
// of many callers into few entries (at most MaxBatchCommands and
// MaxBatchBytes each, MaxInFlight entries out), answering every caller with
// its own result or an error; a lone command is proposed on its caller's
// goroutine. Hold stops it from proposing (commands keep queueing) for a
// leader transfer. A ReadBatcher runs at most one ReadIndex round at a
// time per group: every read waiting when a round starts is linearizable
// once it completes. On a leader under its Lease (granted by a ReadIndex
// round that confirmed it) a round is a local commit-index query and a wait
// for the apply instead (lease.go, leasedread.go, ADR 0012). RaftReplicator
// and NodeHostReadIndex are the
// dragonboat side: an entry or a round that dragonboat drops (a transfer
// or an election under way; dropped entries were never appended) is tried
// again within its deadline, and a leader change ends a wait at once
// (ADR 0007). RaftError maps dragonboat's errors onto the one error type.
//
// Concurrency contract. Submit, Hold, Wait, the Lease's methods and the
// adapters' methods may be called from any goroutine. A Proposer owns its loop goroutine and the
// goroutines of entries in flight; Close stops them and answers what is
// queued. A ReadBatcher's round goroutine is started by a waiter and ends
// when no read waits; Close cancels a running round and waits for it.
package propose
