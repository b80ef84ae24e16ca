// Package routed is a route-aware Go client of a slotmeta cluster: it sends
// every request to the node that leads its key's group, as TiKV's client-go,
// Redis Cluster clients and CockroachDB's DistSender do, so that a request
// the client routes right takes no forward hop between nodes.
//
// # Model
//
// A key's hash slot is CRC32-IEEE(route key) mod 256; the route table
// (GET /v1/cluster/routes) maps each slot to a group under a revision, and
// names each group's live leader and its term; GET /v1/cluster/nodes names
// each node's API address. The client keeps one immutable view of the
// three and replaces it whole when it learns something newer:
//
//   - the route stream (GET /v1/watch?resource=routes) sends the whole table
//     at every change of the serving node's routing — a leader elected, a
//     table revision — so the client follows leader changes within the
//     node's own delay, without a failed request;
//   - every keyed answer carries its route (X-Slot-Group, X-Leader-Node,
//     X-Leader-Term, X-Route-Revision): a leader of a newer term replaces
//     the known one for that group only; a slot whose group changed, or an
//     error that says the slot moved (route_revision_mismatch,
//     slot_migrating, wrong_group, route_not_ready), asks for that slot's
//     route again, by one of its keys, and only that slot's;
//   - one refresher does the asking: one refresh at a time, at most one per
//     Config.RefreshEvery, whatever the number of stale answers.
//
// A stale view costs a forward hop, never an error: a node that does not
// lead a key's group forwards the request to the one that does.
//
// The route key of a request is read from its path (classify): the key of
// /v1/kv/{key}, the uid of /v1/users/{uid}…, the channel id of
// /v1/channels/{type}/{id}…, the reserved key of the system UIDs, the
// body's uid or channel_id of a create. Requests without one (listings
// across slots, cluster operations, the watch) go to the client's
// endpoint, which serves them.
//
// Retries follow the error contract (see Client.Do): only what the server
// marks retryable, after its Retry-After; a node that cannot be reached is
// skipped; at most Config.MaxAttempts sends within the caller's deadline.
// Every data write carries an Idempotency-Key (Do adds one when the caller
// did not), so a write retried after a timeout — applied or not, the
// client cannot know — is applied once: the server answers the retry with
// the first result. Batches (BatchGetKV, BatchWriteKV) are split by leader
// node and the parts sent at once.
//
// # Concurrency
//
// A Client is safe for concurrent use. Reads of the view take no lock
// (an atomic pointer); its updates are serialized. The client owns two
// goroutines — the refresher and the route stream's follower — which New
// starts and Close stops and waits for; a route stream's watchdog is owned
// by the stream it watches. Every request is bounded by its caller's
// context and each attempt by Config.AttemptTimeout.
package routed
