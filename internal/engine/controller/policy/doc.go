// Package policy is what the controller leader decides with: the checks of
// a leader transfer, the preferred-leader reconciler's decision, the
// per-group back-off after failed transfers, and the observations it
// decides from — every node's latest status report, aggregated into group
// views, and every node's reachability streak.
//
// Model. Everything here is a pure function of its inputs or a small book
// of observed facts, with the clock passed in: CheckTransfer(view, target,
// policy, facts) is the one check the API's preflight, a transfer and the
// reconciler share, so they can never disagree; DecidePreferred only ever
// proposes the preferred leader, and only when every check passes —
// membership, progress, reachability now (the leader's own Raft view of the
// target), the hold-down after a disruption, a target low on disk, the
// back-off (ADR 0007) — otherwise it skips and says why. DecideDiskLow,
// asked first, moves a leadership off a node whose disk is low (it refuses
// the group's writes) to the preferred leader or else the first voter the
// same checks pass for. Observations keep the reports and the streaks of
// one controller leadership: a new leader starts a new book.
//
// Concurrency contract. The functions are pure; Observations and Backoff
// are safe for concurrent use (one mutex each). Nothing here owns a
// goroutine or does I/O: the controller leader collects the reports and
// carries out the decisions (package controller/leader: leader.go,
// observe.go, reconcile.go, transfer.go).
package policy
