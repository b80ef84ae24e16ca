// Package sim is the deterministic simulator of the control plane at
// sizes this machine cannot run: the real controller state machine
// (package controller, every command through its encoding) and, on the
// node leading the controller, the real controller leader (package leader:
// observation, preferred leaders, the task executor of package tasks, the
// balancer of package balance) — the production code, driven round by
// round (leader.Leader.Round) on a simulated clock — against simulated
// nodes, groups and load (world.go).
//
// Model. The world is a model of the data plane, not dragonboat: nodes are
// up or down; a group's Raft membership changes only through a live leader;
// a group without a leader elects one ElectionTimeout later when a quorum
// of its voters is up; a new replica holds its group's data after its
// bytes at SnapshotRate (a move's catch-up takes time proportional to
// data); a hash slot's copy is paced at SnapshotRate too (rows are not
// modelled: one stand-in row per 256 KiB of the slot's bytes, host.go),
// with no changes to catch up; the load is operations per second per hash
// slot, served by the node leading the slot's group, and reported as a real
// node reports it (per-slot counters, package heat). The nodes run the
// replicas the controller state places on them (controller.State.Wants), as
// package replicas does.
//
// A scenario (scenario.go, testdata/*.sim) founds a cluster, schedules
// events — joins, nodes lost for good or for a while, rolling restarts,
// drains, a hot hash slot — and states expected outcomes; a run reports the
// time to converge, the moves made and undone, the spread of replicas,
// leaders and load, the controller leader's and the balancer's cost, and
// the largest controller state and command (report.go), with SVG plots of
// the spread over time (plot.go). cmd/slotsim runs scenario files; `make
// sim` runs every scenario, `make test` a short run of each (sim_test.go).
//
// Concurrency contract. A Run is driven by one goroutine (Step); the
// controller leader's observation asks the nodes concurrently, so the
// world takes a lock in every method the leader reaches (host.go). Runs
// share nothing: several may run at once.
package sim
