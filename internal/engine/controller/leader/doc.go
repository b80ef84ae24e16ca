// Package leader is what a node runs while it leads the controller group:
// it observes the cluster, reconciles preferred leaders, drives the
// controller's tasks, balances, and wakes the quiesced groups whose leader
// cannot be reached.
//
// Model. The controller's intent lives in the replicated controller state
// (package controller); what the cluster actually does is learned here, from
// one status report per node and round (ObserveOnce), kept in
// policy.Observations and aggregated into group views. Every decision the
// leader takes is a controller command proposed through the Host — a
// decision record, a task's next step, a balancer action — so a new
// controller leader resumes from the replicated state alone; what is kept
// here (observations, load rates, back-off, transfers in flight, the last
// balancer plan) is rebuilt within a few rounds, and forgotten on stepping
// down.
//
//	observe.go     status reports, node health, group views, and the waking
//	               of groups led from unreachable nodes
//	reconcile.go   the leader reconciler (off a node low on disk, else to the
//	               preferred leader) and the decision log
//	transfer.go    checked leader transfers (decided here, carried out on
//	               the group leader's node)
//	balancer.go    the balancer's input, rounds, plan and status
//	peerapi.go     the peer endpoints the controller leader answers
//
// Other nodes ask the controller leader for what only it holds (groups,
// health, the balancer's plan and status, a checked transfer) over peer RPC;
// Register puts those endpoints on the node's peer server. A node that does
// not lead answers not_leader with its hint, and never passes a request it
// received from another node on again.
//
// Concurrency. Run is the one loop that drives the rounds; its owner (the
// node) starts it and stops it. The operator's calls (Groups, NodeHealth,
// Transfer, Balancer, …) and the peer endpoints run concurrently with it:
// Observations, the load tracker and Backoff are safe for concurrent use, the
// balancer's book has its own lock, and every call is bounded by its context
// and Config.RequestTimeout. The tests drive the rounds themselves
// (ObserveOnce, ReconcileOnce, TasksOnce, BalanceOnce) with their own clock.
package leader
