// Package peer is the node-to-node RPC of slotmeta: HTTP on each node's
// peer listener, binary bodies (the codec of package meta), errors in a
// small JSON envelope, optionally over mutual TLS. The hot requests —
// forwarded writes and reads, read-index questions — travel as frames on one
// long-lived stream per peer, opened on the same listener and served by the
// same handlers (stream.go, streamserver.go, frame.go): a quarter of the CPU
// of an HTTP exchange each.
//
// Model. Every request carries the cluster secret (compared in constant
// time) and its remaining time budget; the server derives its context from
// that budget, so no peer call outlives its caller, and it serves at most a
// bounded number of requests at once (busy past it). A Client bounds the
// requests in flight to each peer and says of every failure whether the
// request may have reached the peer (sent) — a write's outcome is unknown
// only then. Forward batches the commands forwarded to one leader: a command
// that finds a free slot leaves alone, commands that arrive while the slots
// are busy leave together (propose-batch), each answered on its own. The
// handlers that give the endpoints their meaning belong to the packages of
// their concern, each registering its own on the node's Server: forwarded
// writes and reads (dispatch/serve.go), the controller leader's views and
// checked transfers (controller/leader/peerapi.go), a node's history
// (history), backup images (backupjob/image.go), and the node's own (package
// cluster: status, read indexes, leaders, applied indexes, nodes, wakes and
// memberships in peerapi.go; replica digests and fences in checks.go; a
// lost-quorum recovery's steps in recovery.go).
// This package owns the wire: framing, envelope, route headers, batch
// codec, TLS.
//
// Concurrency contract. A Client and a Server are safe for concurrent use.
// A forwarder's send goroutines (at most four per peer) are started by
// callers and end when its queue is empty. Each open stream owns a reader
// and a writer goroutine (and, on the server, one per request it serves,
// bounded); Client.Close and Server.Close end them.
package peer
