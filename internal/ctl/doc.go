// Package ctl is `slotmeta ctl`, the command-line client of a slotmeta
// cluster's API, in the manner of etcdctl and kubectl (Run).
//
// # Model
//
// A command is a noun and a verb, then its arguments and flags:
//
//	slotmeta ctl [global flags] <noun> <verb> [args] [flags]
//	slotmeta ctl kv put feature.flags on --if-match 7 -o json
//
// Nouns: kv, user, channel, subscriber (the data), cluster, endpoint,
// node, balancer, group, route, leader, replica, task, backup and audit
// (operations); `slotmeta ctl -h` lists every command, `slotmeta ctl
// <noun> <verb> -h` its flags. Flags and arguments may be mixed; after
// "--" everything is an argument. `slotmeta ctl completion bash|zsh`
// writes a completion script of the same tree (completion.go).
//
// Every command is one or a few calls of the generated Go client (package
// client), through the one client dial builds (dial.go): the route-aware
// client of client/routed, which sends a keyed request to the leader of its
// key's group and retries by the error contract (three sends at most).
// Every write carries an Idempotency-Key — a random one per invocation, or
// --idempotency-key — so a write retried with the same key applies once
// (a retryable failure prints the key to retry with). A command parses,
// makes its call and ends in reply (reply.go), the one place that tells
// no answer, a refusal and the body to show apart.
//
// Output is a table (aligned columns, a header line, a row per item) or,
// with -o json, the server's JSON body as it is (jq-ready); where a command
// assembles an answer of several calls (subscriber list's pages, drain
// status) it prints one JSON document of the generated types; a delete,
// answered 204 without a body, prints {"key"|"uid"|…, "deleted": true}.
// The tool's own error codes are unreachable, timeout, canceled and
// invalid_answer (not the API's JSON). Errors go to
// stderr as one line "error: <code>: <message>"; with -o json the server's
// error JSON ({"error":{"code","message","retryable",…}}) as it is.
//
// # Global flags and the environment
//
// Each global flag falls back to an environment variable (the flag wins);
// they may come before the noun or after the verb:
//
//	--endpoints  SLOTMETA_ENDPOINTS  comma-separated base URLs (default http://127.0.0.1:8080), asked for
//	                                 the cluster's view; a keyed request goes to its group's leader once
//	                                 known, anything else to the first endpoint (its node forwards); a
//	                                 retry goes to the known nodes and endpoints in turn, skipping any
//	                                 that just failed
//	--token      SLOTMETA_TOKEN      bearer token
//	--cacert     SLOTMETA_CACERT     CA of the nodes' HTTPS certificates
//	--cert/--key SLOTMETA_CERT/_KEY  client certificate and key (with --cacert)
//	-o/--output  SLOTMETA_OUTPUT     table (default) or json
//	--timeout    SLOTMETA_TIMEOUT    deadline of the whole command, every call included (default 10s)
//
// # Exit codes
//
// One table (exitCodes) maps the error JSON's code to the exit code:
//
//	0  success
//	1  any other error: no endpoint reachable, interrupted, invalid_argument, payload_too_large, internal, an invalid answer
//	2  usage: a bad flag or argument, unreadable TLS files; nothing was sent
//	3  not found (not_found)
//	4  precondition or conflict: failed_precondition, conflict, aborted, epoch_stale
//	5  unavailable, retry: route_not_ready, not_leader, busy, slot_migrating, timeout, wrong_group,
//	   no_space, queue_full, rate_limited, route_revision_mismatch, a 503/429, no answer within --timeout
//	6  unauthenticated or permission_denied
//
// A batch (kv batch-get, kv batch-write) answers 200 with an item per key;
// its exit code is that of the first failed item (a batch write's aborted
// items, failed because another of their hash slot did, come last), 0 when
// none failed. A key a batch-get does not find is an answer, not an error.
// group check exits 4 when the group's replicas differ (diverged or no
// majority), 0 when they agree; cluster status, endpoint status and
// endpoint health exit 5 when a node is not ready or does not answer.
package ctl
