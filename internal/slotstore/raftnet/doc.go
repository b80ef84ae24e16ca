// Package raftnet is the Raft transport of every NodeHost: dragonboat's own
// TCP transport (or a test's fault transport), with a record of when this
// node last received a message from each replica of each shard.
//
// Model. dragonboat keeps its view of which followers answer the leader to
// itself; a follower answers every heartbeat, so on the leader's node
// Heard.Ago of a replica is the leader's own view of whether that replica
// is reachable now. The leader-transfer gates and the forwarders use it
// (ADR 0007).
//
// Concurrency contract. Heard.Record runs on the transport's receive
// goroutines and Ago on any goroutine; neither blocks on the other beyond a
// read lock. The transport's goroutines belong to dragonboat.
//
// dragonboat's TCP transport constructor is reached by go:linkname in the
// pinned dragonboat version (a test pins it); an upgrade must check its
// signature.
package raftnet
