// Package raftnet is the Raft transport of every NodeHost: dragonboat's own
// TCP transport with the server side of the Raft port taken over (or a
// test's fault transport), with a record of when this node last received a
// message from each replica of each shard.
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
// Without a test transport, dragonboat's TCP transport is wrapped in a
// serverTransport (server.go): dragonboat dials as it always does, but its
// own listener is never started. The Raft port is the node's own bounded
// listener (package netguard), and serverTransport runs the accept loop
// and one goroutine per connection, which runs the TLS handshake (with
// TLS) and then serves the connection with dragonboat's own loop.
//
// Concurrency contract. Heard.Record runs on the goroutines that receive
// (serverTransport's per-connection goroutines, or a test transport's),
// Heard.Asked on dragonboat's send goroutines, Ago and Unanswered on any
// goroutine; none blocks on another beyond a read lock. serverTransport's
// accept loop and connection goroutines end in its Close.
//
// dragonboat's TCP transport constructor (newTCPTransport, heard.go) and
// its connection loop, (*TCP).serveConn (tcpServeConn, server.go), are
// reached by go:linkname in the pinned dragonboat version (a test pins it);
// an upgrade must check their signatures.
package raftnet
