// Package netguard bounds the connections a listener holds, so that no
// client — authenticated or not — can use up the process's file
// descriptors and take the node down with them.
//
// The model. A Listener wraps a net.Listener with three bounds: the
// connections open at once (MaxConns), those of one source address
// (MaxPerSource; an IPv6 address counts by its /64), and how long a
// connection may stay open before it has proven itself (Unproven). When a
// new connection would pass either count, the oldest held connection that
// has not proven itself makes room — of the same source for the per-source
// bound, of any for the total — and is closed (counted as evicted), so that
// strangers cannot keep out the nodes and clients that prove themselves.
// Only when every held connection it could evict is proven is the new one
// closed as soon as it is accepted (the client sees its connection closed,
// not a hang in the backlog) and counted as refused.
//
// A connection proves itself only when its owner says so: Conn.Prove, or
// Prove(ctx) from a request's context (ConnContext put it there), or
// ProveConn under a TLS connection — a request that authenticated, a TLS
// handshake with a node certificate, a well-formed Raft frame. Until then
// every read deadline asked of it is pulled in to the moment the grace
// ends, and a read after that fails with a read error that is not a timeout
// (ErrUnproven), so a loop that retries timeouts (dragonboat's) closes the
// connection instead of spinning. Under net/http (ConnState) the grace holds
// while a request is served and starts again when the connection goes idle.
//
// Accept never fails on a transient error: out of descriptors, say, it
// waits (5 ms, doubling to 1 s) and accepts again, counting each error —
// dragonboat's own accept loop panics on any error, which is how an
// unauthenticated flood of the API port used to kill a node. Only a closed
// listener ends Accept.
//
// A Budget holds the bounds of a node's listeners. BudgetFor derives one
// from a descriptor limit, ProcessBudget from the process's (Go raises the
// soft limit to the hard one when the process starts): half of it is kept
// for Pebble's files, the Raft log and the connections a node dials itself;
// the API gets most of the rest, peer RPC and Raft a share each.
//
// Concurrency contract: a Listener is safe for concurrent use; Accept may
// be called from one goroutine (as net/http and the Raft transport do) while
// connections close on others. A Conn is a net.Conn: Read and Write from
// one goroutine each, deadlines and Prove from any.
package netguard
