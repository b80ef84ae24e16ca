// Package restore lays a node's data directory out from a backup (issue
// 29), so that the node, started on it, founds a new cluster holding the
// backed-up state.
//
// Model. A restore runs once per node, offline, each node given the same
// backup and the same founding members: `slotmeta restore --from DIR
// --data-dir … --node-id N --initial-members …`. Every node computes the
// same placement of the backed-up groups on the members
// (controller.Placement, the founding rule), and lays out in its own store
// the groups placed on it: each group's image recovered (fsm), then
// rebased as the first state of the new cluster's replica (fsm.Rebase:
// revisions and change-log positions bumped past the old cluster's, logs
// emptied, nothing fenced). It writes a Seed last, which makes the data
// directory a restored one:
//
//   - the cluster's identity: a new cluster id and the Raft deployment id
//     derived from it (dragonboat drops every message of another
//     deployment: a node of the old cluster, its Raft state pointing at
//     the same addresses, cannot disturb the new one, nor join it — the new
//     cluster makes its own peer secret at its founding);
//   - where each replica's Raft log begins (raftlog.Start: past the
//     restored state, so that a replica added later is sent a snapshot,
//     never the log from its first entry over an empty state);
//   - what the controller is founded with (controller.Restore: the groups,
//     the routing table of the images, the old audit trail).
//
// The node reads the seed when it opens (package cluster): it takes the
// identity, records the log starts of the replicas it has not run yet,
// and proposes the founding with the restore. A seed stays: it keeps the
// deployment id, which dragonboat checks on every start.
//
// Refusals come before anything is written: a backup that does not verify
// whole (backup.Verify: partial, damaged, truncated, foreign, newer
// format), a data directory that is not empty, members that do not name
// this node. A restore that fails halfway removes what it wrote.
//
// Concurrency contract. Layout runs alone on its data directory; nothing
// in the package keeps state between calls.
package restore
