// Package ctrlrecovery recovers the controller group from a lost quorum
// (issue 29; the model in package controller, recovercontroller.go). It
// runs offline, on a stopped node's data directory (`slotmeta
// recover-controller`, through cluster.RecoverController, which opens the
// NodeHost: one that neither listens nor sends, raftnet.Silent):
//
//   - Status (no confirmation): what this node's controller replica holds —
//     its role, term, commit, applied index and last log index — so that
//     the operator picks the most advanced survivor.
//   - The base (AcceptDataLoss): the replica applies what it knew
//     committed, its state is exported (dragonboat's exported snapshot),
//     its membership rewritten — itself the only voter, the lost nodes
//     removed, the other survivors out (they rejoin) — and imported
//     (tools.ImportSnapshot); the commands it logged past its commit and
//     the lost nodes are written to controller-recovery.json, which the
//     started node proposes (RecoverController) and fences by meanwhile.
//   - Every other survivor (Rejoin): its controller replica's Raft data is
//     removed (a log that may run past the base's would confuse the new
//     leader), and it starts as a new non-voting member through the base.
//
// A node whose controller replica a recovery rewrote finds
// controller-recovery.json (Record) in its data directory at start. From the
// start, before any Raft message is read, it drops the lost nodes' messages
// and refuses their peer requests: a lost voter that came back would
// otherwise lead the old membership's majority, at a higher term, over the
// recovered state. The base proposes RecoverController once it leads; a
// rejoining node registers through the base and follows as a new
// non-voting member. The record is kept: the lost nodes stay fenced (the
// recovered state removes them too).
//
// The node's role in the controller group (voter or non-voting) is a file
// of its data directory too (role.go): a recovery sets it.
package ctrlrecovery
