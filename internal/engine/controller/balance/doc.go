// Package balance is the balancer's planner: given the cluster as the
// controller leader sees it — nodes and their reachability, groups with
// their peers, leaders, hash slots and health, the measured load of every
// hash slot, the tasks that run and the slots moved lately — it says what
// to do next and why, with the numbers behind each step.
//
// Model. Decide is a pure function of its Input and Config, and a Plan is
// what it returns; the clock is in the input. It proposes, in this order,
// and never more than the budget (Config.MaxTasks minus the balancing tasks
// already running):
//
//  1. drain: every replica on a draining node moves to the active node
//     with the fewest replicas (drains go on while other faults are open,
//     as long as the group keeps a quorum: draining a dead node is how it
//     is replaced); then rebuild: a replica its node could not start
//     (Group.Failed) moves the same way, rebuilt elsewhere from a snapshot
//     (not while the balancer is paused: no one asked for it);
//  2. group count: with more active data nodes than replicas per group,
//     the cluster wants GroupsPerNode groups per node (never fewer than it
//     was bootstrapped with, at most MaxGroups): the busiest group is split,
//     or, when nodes left, the least busy group merged into the next least
//     busy one — one split or merge at a time;
//  3. replicas: a replica moves from the node with the most to the node
//     with the fewest while they differ by more than ReplicaSkew (a move
//     under way, Input.Moving, counts as done);
//  4. leaders: a group led by the node leading the most gets a preferred
//     leader on the node leading the fewest while they differ by more than
//     LeaderSkew (the preferred-leader reconciler carries it out, with its
//     own checks);
//  5. hash slots: by measured load when the busiest group carries more
//     than LoadSkew times the mean and MinLoad ops/s, else — when the
//     busiest group carries less than half of MinLoad, so that the two
//     modes do not undo each other — by count (a difference of more than
//     SlotSkew, the coldest slot first): one slot moves from the busiest
//     group to the least busy one led by another node, the one that
//     narrows the gap most.
//
// Hysteresis: skews below the thresholds are left alone, a slot is not
// moved back to the group it left within SlotCooldown (so each slot moves
// at most once per direction while load stays put), and a move must leave
// the two groups closer than before, lowering the busier one by half the
// load it moves at least (a slot about the size of the gap would only swap
// which group is the busier). Nothing but drains and rebuilds is planned
// while a fault is open: an active node unreachable, a group without a
// quorum, or a replica that failed to start.
// A group that a task works on is left alone. A paused balancer plans
// drains only (Input.DrainOnly): an operator asked for them.
//
// Concurrency contract. Everything is pure; nothing here owns a goroutine
// or does I/O. Package controller/leader (balancer.go) builds the input
// each round, calls Decide, carries out the actions and records them in
// the decision log.
package balance
