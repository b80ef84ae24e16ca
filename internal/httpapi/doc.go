// Package httpapi is slotmeta's public HTTP/JSON API: a chi router (router.go)
// with one sub-router per resource tree under /v1 — users, business keys
// (kv), a user's devices, plugins, memberships and CMD bindings, system uids,
// plugins' users, channels with their lists, runtime metadata, migrations and
// events, and the cluster (routes, nodes, groups, tasks, decisions, health) —
// the health and metrics endpoints, and the one table that turns a
// slotstore.Error into an HTTP status and the error body of docs/design.md
// §10. openapi.yaml at the repository root is its contract.
//
// The handlers of each resource family are methods of a small type of its
// own that holds the shared *api (userRoutes, kvRoutes, channelRoutes, …;
// under /v1/cluster, clusterRoutes with balancerRoutes, groupRoutes and
// taskRoutes). One route table (router.go, mountV1) mounts them, a
// sub-router per family, so the whole API can be read in one place; api
// itself keeps what every handler shares: decoding, routing, proposing,
// rendering, errors and the middleware. A resource stored under one route
// key and named by its path (a user, a device, a channel, a membership, …)
// is a row (row.go): its GET and DELETE are the row's, and a write names
// only its body and the command it makes; the same flow serves them all.
//
// # Model
//
// A handler only translates. It decodes and validates the request (query,
// headers, path, body) completely before it touches the Backend, so a
// rejected request never reaches Raft; then it builds one meta.Command or
// meta.Query, hands it to the Backend and renders what comes back. It never
// routes, retries or forwards on its own: the Backend owns all of that.
// Reads go through read (meta.Read), so every answer arrives as the type its
// query declares; every listing renders through pageOf.
//
// A body is application/json, bounded by Config.MaxBodyBytes, and exactly
// one object whose member names match the request type's JSON names exactly
// (no case folding, no duplicates); validator tags check the values, and
// every rejected field is named in the error's details.
//
// A keyed request (a user, a business key) loads the node's routing snapshot
// once. That snapshot fences the request (an X-Route-Revision older than the
// snapshot's revision answers 409 route_revision_mismatch before anything is
// proposed) and supplies the route headers (X-Hash-Slot, X-Slot-Group,
// X-Leader-Node, X-Leader-Term, X-Config-Epoch, X-Route-Revision); the route
// the Backend reports with its answer replaces them, because it is the
// fresher observation. A leader that is not known is left out, never
// guessed. Reads also say who served them (X-Served-By) and at which applied
// index (X-Applied-Index).
//
// Listing users, a plugin's users or business keys (by prefix or range)
// walks the 256 hash slots in order (slotWalk, cursor.go). One routing table
// groups consecutive hash slots owned by the same group into one query
// (meta.ScanUsers, ScanPluginUsers, ScanKV); the cursor names a position
// (hash slot, last key), never a node or a group, so a client can continue
// a listing on any node and across leader changes, splits and hash-slot
// moves.
//
// # Errors
//
// Every failure is a *slotstore.Error and is rendered by errors.go, whose
// table is the only place that maps a Code to a status. A client mistake is
// always a 4xx; 5xx means the node or the cluster could not serve, and
// retryable ones carry Retry-After. A panic in a handler is logged with its
// stack and answered with the same error body (500 internal).
//
// # Concurrency
//
// The handler New returns is safe for concurrent use and holds no mutable
// state of its own besides its Prometheus collectors. Each request runs on
// its own goroutine with a context that carries a deadline (Config.
// RequestTimeout) and is cancelled when the client goes away; that context
// is passed to the Backend, which must itself be safe for concurrent use.
// Routing snapshots are immutable values, so a request that loaded one can
// use it without locks for as long as it runs.
package httpapi
