// Package operatortest is an in-memory slotstore.Operator for the tests of
// the operator's tools (the API's cluster routes and the console): one fake
// that both use, so that a new operation is added to one fake, not two.
//
// Fake keeps a small cluster — nodes, groups with leaders and terms, the
// slot map, tasks, decisions, the audit trail, the balancer — and changes it
// as a node would, within reason: a transfer moves the leader and bumps the
// term, a task is created running, a drain marks the node draining, a pause
// pauses. It records the name of every operation called (Calls), so a test
// can assert that a refused request never reached the node. What it cannot
// know (a plan, node load, a removal's refusal) tests set in its fields
// before use. ChangeLog beside it is the node's stored change log, for the
// console's change tails.
//
// Concurrency: every method is safe for concurrent use; set the exported
// fields before the fake is shared, and read state through the methods.
package operatortest

import (
	"context"
	"slices"
	"sync"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Fake is an in-memory slotstore.Operator (package doc).
type Fake struct {
	// Self is the node the fake is (NodeID, the balancer's aggregator).
	Self slotstore.NodeID
	// Plan is what BalancerPlan answers; Load the balancer's per-node load.
	Plan slotstore.BalancePlan
	Load []slotstore.NodeLoad
	// Pins are the balancer's pins (SetBalancer releases them).
	Pins []slotstore.GroupPin
	// Local is the node's own replicas (Summary); NoControllerLeader makes
	// what the controller leader answers — groups, node health, the
	// balancer and its plan — fail as on a node whose controller lost its
	// quorum.
	Local              []slotstore.LocalReplica
	NoControllerLeader bool
	// SlotMovesOff refuses the tasks that move hash slots, as a node
	// started with them turned off does.
	SlotMovesOff bool
	// RemoveErr, when set, is RemoveNode's refusal.
	RemoveErr error
	// Histories are the nodes' histories and Heat the heat map that
	// History answers (a node without one: not_found).
	Histories map[slotstore.NodeID]slotstore.NodeHistory
	Heat      slotstore.SlotHeat

	mu        sync.Mutex
	calls     []string
	nodes     []slotstore.NodeInfo
	health    []slotstore.NodeHealth
	groups    map[slotstore.GroupID]slotstore.GroupView
	slots     [slotstore.HashSlotCount]slotstore.GroupID
	tasks     map[uint64]slotstore.Task
	nextTask  uint64
	decisions []slotstore.Decision
	audit     []slotstore.AuditRecord
	paused    bool
	drains    []slotstore.DrainProgress
	transfers int
	splits    [][]slotstore.HashSlot
	backups   *Backups
	recovery  *Recovery
}

var _ slotstore.Operator = (*Fake)(nil)

// New returns a fake node self of a three-node cluster (node 2
// unreachable) with groups 1 and 2 of 128 hash slots each (alternating),
// led by node 3 at term 4 and node 1 at term 2.
func New(self slotstore.NodeID) *Fake {
	f := &Fake{Self: self, tasks: map[uint64]slotstore.Task{}, nextTask: 1,
		groups: map[slotstore.GroupID]slotstore.GroupView{
			1: {ID: 1, HashSlots: 128, Leader: 3, Term: 4, PreferredLeader: 3, Voters: []slotstore.NodeID{1, 2, 3}},
			2: {ID: 2, HashSlots: 128, Leader: 1, Term: 2, PreferredLeader: 1, Voters: []slotstore.NodeID{1, 2, 3}},
		},
		nodes: []slotstore.NodeInfo{{ID: 1, RaftAddr: "127.0.0.1:1", State: slotstore.NodeActive},
			{ID: 2, RaftAddr: "127.0.0.1:2", State: slotstore.NodeActive}, {ID: 3, RaftAddr: "127.0.0.1:3", State: slotstore.NodeActive}},
		health: []slotstore.NodeHealth{{Node: 1, Health: slotstore.NodeReachable, ReportAgeMs: 200, HealthyForMs: 60_000},
			{Node: 2, Health: slotstore.NodeUnreachable, ReportAgeMs: 7_000, HealthyForMs: -1},
			{Node: 3, Health: slotstore.NodeReachable, ReportAgeMs: 200, HealthyForMs: 60_000}},
		Plan: slotstore.BalancePlan{Actions: []slotstore.BalanceAction{}}, Load: []slotstore.NodeLoad{}}
	for i := range f.slots {
		f.slots[i] = slotstore.GroupID(1 + i%2)
	}
	return f
}

// Record notes that operation call was asked of the node (a test's own
// fake of the rest of the node records into the same list).
func (f *Fake) Record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

// Calls returns the operations asked so far, in order.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Count is how often operation call was asked.
func (f *Fake) Count(call string) int {
	n := 0
	for _, c := range f.Calls() {
		if c == call {
			n++
		}
	}
	return n
}

// SetGroup puts (or replaces) a group's view.
func (f *Fake) SetGroup(v slotstore.GroupView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups[v.ID] = v
}

// PutTask puts a task as the controller holds it (next ids follow it).
func (f *Fake) PutTask(t slotstore.Task) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks[t.ID] = t
	f.nextTask = max(f.nextTask, t.ID+1)
}

// SetNodeState sets a node's state as the controller records it.
func (f *Fake) SetNodeState(id slotstore.NodeID, state slotstore.NodeState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.nodes {
		if f.nodes[i].ID == id {
			f.nodes[i].State = state
		}
	}
}

// Transfers counts the leader transfers carried out (not the dry runs).
func (f *Fake) Transfers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.transfers
}

// Splits returns the hash slots of every split asked for.
func (f *Fake) Splits() [][]slotstore.HashSlot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.splits)
}

// Audit is the audit recorder's sink: it keeps records as the controller
// does, numbered from 1.
func (f *Fake) Audit(_ context.Context, rec slotstore.AuditRecord) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec.Seq = uint64(len(f.audit) + 1)
	f.audit = append(f.audit, rec)
	return rec.Seq, nil
}

// Decide appends a decision to the log.
func (f *Fake) Decide(d slotstore.Decision) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d.Seq = uint64(len(f.decisions) + 1) // numbered as the controller numbers them
	f.decisions = append(f.decisions, d)
}
