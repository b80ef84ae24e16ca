package cluster

import (
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
)

// Stats are a node's counters since it started, as one value for
// diagnostics and tests (the metrics export the same).
type Stats struct {
	// Entries and Commands: Raft entries this node's proposers proposed and
	// the commands they carried.
	Entries, Commands uint64
	// Forward: writes this node forwarded to leaders, alone or in batches.
	Forward peer.ForwardStats
	// ReadRounds and Reads: ReadIndex rounds of the groups on this node and
	// the linearizable reads they served (groups that left no longer count).
	ReadRounds, Reads uint64
	// LeaseRounds: of the read rounds, those the groups' leaders on this
	// node answered under their lease (no ReadIndex: ADR 0012);
	// RemoteRounds: those of followers here that a leader's node answered
	// from its lease (peer/readindex.go).
	LeaseRounds, RemoteRounds uint64
	// LeaseNowReads: linearizable reads the leaders here answered at once
	// under their lease, with no round and no log query (the state machine
	// had applied all its replica saved: propose.LeasedReadIndex.ReadNow).
	LeaseNowReads uint64
	// DroppedProposals: entries dragonboat dropped, proposed again.
	DroppedProposals uint64
	// MissedTransferAttempts: leader transfer attempts of this node (as the
	// leader) that did not land within an election timeout.
	MissedTransferAttempts uint64
	// Snapshots: Raft snapshots of slot groups received, recovered and sent.
	Snapshots SnapshotStats
	// RaftLog: what the Raft log left out and raised (package raftlog).
	RaftLog raftlog.Stats
}

// LeaseServed is the reads and rounds a leader's lease answered here.
func (s Stats) LeaseServed() uint64 { return s.LeaseRounds + s.LeaseNowReads }

// Stats returns the node's counters. Safe at any time.
func (n *Node) Stats() Stats {
	t := n.metrics.Totals()
	s := Stats{Entries: t.Entries, Commands: t.Commands, Forward: n.peers.ForwardStats(),
		DroppedProposals: t.DroppedProposals, MissedTransferAttempts: t.MissedTransferAttempts,
		Snapshots: n.snapshotStats(), RaftLog: n.logdb.Stats()}
	for _, g := range n.replicas.All() {
		r, d := g.Reads.Stats()
		s.ReadRounds += r
		s.Reads += d
		_, l := g.Lease.Stats()
		s.LeaseRounds += l
		s.RemoteRounds += g.Leased.RemoteRounds()
		s.LeaseNowReads += g.Leased.NowReads()
	}
	return s
}
