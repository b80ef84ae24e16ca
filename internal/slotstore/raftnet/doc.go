// Package raftnet is the Raft transport of every NodeHost: dragonboat's own
// TCP transport (or a test's fault transport), with a record of when this
// node last received a message from each replica of each shard.
//
// Model. dragonboat keeps its view of which followers answer the leader to
// itself; a follower answers every heartbeat and replicate, so on the
// leader's node Heard.Unanswered of a replica — how long a request sent to
// it has waited — is the leader's own view of whether that replica is
// reachable now, and stays zero in a quiesced group, which sends nothing
// (Heard.Ago, the silence, grows there without meaning a fault). The
// leader-transfer gates, the group views' live voters and the forwarders use
// them (ADR 0007).
//
// Concurrency contract. Heard.Record runs on the transport's receive
// goroutines, Heard.Asked on its send goroutines, Ago and Unanswered on any
// goroutine; none blocks on another beyond a read lock. The transport's goroutines belong to dragonboat.
//
// dragonboat's TCP transport constructor is reached by go:linkname in the
// pinned dragonboat version (a test pins it); an upgrade must check its
// signature.
package raftnet
