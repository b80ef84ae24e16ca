// Package checks concludes state checks (issue 52, ADR 0020): whether the
// replicas of a group hold the same state.
//
// Model. A check is a command through the group's Raft log
// (meta.CheckState): every replica reaches it at the same index, commits
// what came before, and takes a store snapshot there (package fsm); package
// digests hashes that snapshot per hash slot on each node. The coordinator
// (the controller leader, package leader) collects one digest per replica
// and Compare says whether they agree, which hash slots differ and which
// replicas are the minority: those whose digest differs from one held by
// more than half of the group's replicas. Without such a digest there is no
// majority and nothing may be chosen automatically.
//
// The package is pure (no store, no engine): the controller leader
// (package leader) and the console (its props) import it.
package checks
