package raftlog

import (
	_ "unsafe" // for go:linkname

	// Initialised before this package, so that init below runs after
	// dragonboat has set the variables it overrides.
	_ "github.com/lni/dragonboat/v4"
)

// Per-replica sizes. dragonboat gives every replica a proposal queue, a
// ReadIndex queue and a receive queue as fixed double buffers allocated when
// the replica starts, and an in-memory log slice that it allocates again
// whenever all of it is applied. Its defaults are sized for a few busy
// groups: 2 × 2048 entries (80 bytes each), 2 × 4096 request pointers and
// 2 × 1024 messages (304 bytes each) — about 1 MiB a replica, all of it
// scanned by the garbage collector — and a 512-entry (40 KiB) log slice.
// With one entry per group in each round, as when many groups share the
// load, that slice was a 40 KiB allocation per write on every replica
// (bench/README.md, "Many groups"). Every replica also keeps 16 pending-
// proposal shards with a 5 KiB random source each, and every Raft
// connection a 2 MiB send and a 2.1 MiB receive buffer (dragonboat grows a
// message buffer beyond them when it must).
//
// Our own proposer keeps at most a few entries of a group in flight and the
// read batcher one ReadIndex round, so short queues lose nothing: a full one
// answers ErrSystemBusy, which the proposer reports (never silently drops);
// a message dropped from a full receive queue is sent again by Raft.
//
// The sizes are process-wide variables of the pinned dragonboat version,
// set once in init, before any NodeHost can exist; Sizes reports them.
const (
	proposalQueue     = 256       // entries a replica queues before Raft takes them
	readIndexQueue    = 256       // ReadIndex requests queued
	receiveQueue      = 128       // messages received and not yet stepped
	entrySlice        = 64        // in-memory log slice, entries
	entrySliceMinFree = 16        // a slice with less room left is replaced
	proposalShards    = 2         // pending-proposal shards (lock striping of a replica's proposals)
	connBuffer        = 256 << 10 // per Raft connection, send and receive
)

//go:linkname incomingProposalsMaxLen github.com/lni/dragonboat/v4.incomingProposalsMaxLen
var incomingProposalsMaxLen uint64

//go:linkname incomingReadIndexMaxLen github.com/lni/dragonboat/v4.incomingReadIndexMaxLen
var incomingReadIndexMaxLen uint64

//go:linkname receiveQueueLen github.com/lni/dragonboat/v4.receiveQueueLen
var receiveQueueLen uint64

//go:linkname entrySliceSize github.com/lni/dragonboat/v4/internal/raft.entrySliceSize
var entrySliceSize uint64

//go:linkname minEntrySliceSize github.com/lni/dragonboat/v4/internal/raft.minEntrySliceSize
var minEntrySliceSize uint64

//go:linkname pendingProposalShards github.com/lni/dragonboat/v4.pendingProposalShards
var pendingProposalShards uint64

//go:linkname perConnBufSize github.com/lni/dragonboat/v4/internal/transport.perConnBufSize
var perConnBufSize uint64

//go:linkname payloadBufferSize github.com/lni/dragonboat/v4/internal/transport.payloadBufferSize
var payloadBufferSize uint64

func init() {
	incomingProposalsMaxLen = proposalQueue
	incomingReadIndexMaxLen = readIndexQueue
	receiveQueueLen = receiveQueue
	entrySliceSize = entrySlice
	minEntrySliceSize = entrySliceMinFree
	pendingProposalShards = proposalShards
	perConnBufSize = connBuffer
	payloadBufferSize = connBuffer
}

// ReplicaSizes are the per-replica sizes in force.
type ReplicaSizes struct {
	ProposalQueue, ReadIndexQueue, ReceiveQueue, EntrySlice, EntrySliceMinFree uint64
	ProposalShards, ConnSendBuffer, ConnReceiveBuffer                          uint64
}

// Sizes reports the per-replica sizes dragonboat runs with.
func Sizes() ReplicaSizes {
	return ReplicaSizes{ProposalQueue: incomingProposalsMaxLen, ReadIndexQueue: incomingReadIndexMaxLen,
		ReceiveQueue: receiveQueueLen, EntrySlice: entrySliceSize, EntrySliceMinFree: minEntrySliceSize,
		ProposalShards: pendingProposalShards, ConnSendBuffer: perConnBufSize, ConnReceiveBuffer: payloadBufferSize}
}
