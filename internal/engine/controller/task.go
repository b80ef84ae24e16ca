package controller

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

// Task kinds, phases and statuses. A replica move walks its phases in order;
// each step records the membership it observed, so a task's history is the
// Raft evidence of what happened.
const (
	TaskReplicaMove slotstore.TaskKind = "replica_move"

	PhaseAddLearner slotstore.TaskPhase = "add_learner" // add the target as a non-voting replica
	PhaseCatchUp    slotstore.TaskPhase = "catch_up"    // wait until the learner has caught up (a snapshot if the log was compacted)
	PhasePromote    slotstore.TaskPhase = "promote"     // make it a voter (same replica id)
	PhaseRemoveOld  slotstore.TaskPhase = "remove_old"  // remove the old voter
	PhaseCommit     slotstore.TaskPhase = "commit"      // commit the new desired peers and ConfigEpoch+1
	PhaseDone       slotstore.TaskPhase = "done"

	TaskRunning    slotstore.TaskStatus = "running"
	TaskFailed     slotstore.TaskStatus = "failed"
	TaskCancelled  slotstore.TaskStatus = "cancelled"
	TaskSucceeded  slotstore.TaskStatus = "succeeded"
	TaskCancelling slotstore.TaskStatus = "cancelling" // cancel asked; the executor removes the learner, then cancelled
)

// movePhases is the order of a replica move's phases.
var movePhases = []slotstore.TaskPhase{PhaseAddLearner, PhaseCatchUp, PhasePromote, PhaseRemoveOld, PhaseCommit, PhaseDone}

// rebuildPhases is the order of a rebuild in place — a replica move whose
// From is its To: a node holds one replica of a group, so the old one is
// removed first and the new one, a learner on the same node, is sent the
// group's state as any move's learner is. The group runs on one voter
// fewer in between; once the old replica is removed the task only goes
// forward.
var rebuildPhases = []slotstore.TaskPhase{PhaseRemoveOld, PhaseAddLearner, PhaseCatchUp, PhasePromote, PhaseCommit, PhaseDone}

// Rebuilds reports whether t is a rebuild in place (a replica move from a
// node to itself).
func Rebuilds(t *Task) bool { return t.Kind == TaskReplicaMove && t.From == t.To }

// CreateMove starts a replica move of Group from From to To. A move of the
// same group, from and to that failed earlier is resumed instead (same task,
// same new replica id, next attempt). From equal to To rebuilds the replica
// in place (rebuildPhases).
type CreateMove struct {
	Group slotstore.GroupID `json:"group"`
	From  slotstore.NodeID  `json:"from"`
	To    slotstore.NodeID  `json:"to"`
}

// AdvanceTask moves a task from ExpectedPhase to Phase (compare-and-set) and
// records what was observed; Status/Error end it.
type AdvanceTask struct {
	ID            uint64               `json:"id"`
	ExpectedPhase slotstore.TaskPhase  `json:"expected_phase"`
	Phase         slotstore.TaskPhase  `json:"phase"`
	Status        slotstore.TaskStatus `json:"status,omitempty"`
	Error         string               `json:"error,omitempty"`
	Observed      *PhaseRecord         `json:"observed,omitempty"`
	// HashSlot, when set, must be the slot the task moves now (splits and
	// merges move several, one after another).
	HashSlot *slotstore.HashSlot `json:"hash_slot,omitempty"`
	// Cursor, when set, is how far the slot's change log was applied.
	Cursor *ChangeCursor `json:"cursor,omitempty"`
	// CopiedTo, when set, is how far the copy phase imported the slot's
	// rows (the last row key): progress within the phase, which restarts
	// the phase's clock.
	CopiedTo []byte `json:"copied_to,omitempty"`
	// SnapshotBytes, when set and not what the task holds, is how many
	// snapshot bytes a replica move's learner has received: progress within
	// the catch-up phase, which restarts the phase's clock.
	SnapshotBytes uint64 `json:"snapshot_bytes,omitempty"`
}

// CancelTask asks to cancel a task; only possible before its commit phase.
type CancelTask struct {
	ID uint64 `json:"id"`
}

// MaxFinishedTasks bounds the finished tasks kept; the oldest go first.
const MaxFinishedTasks = 200

func activeTask(s *State, g slotstore.GroupID) *Task {
	for _, t := range s.Tasks {
		if (t.Group == g || t.ToGroup == g) && (t.Status == TaskRunning || t.Status == TaskCancelling) {
			return t
		}
	}
	return nil
}

func applyCreateMove(s *State, c *CreateMove, timeMs int64) Result {
	g, ok := s.Groups[c.Group]
	if !ok {
		return refuse(slotstore.CodeNotFound, "group %d does not exist", c.Group)
	}
	if c.From == c.To { // a rebuild in place: an older controller refuses it
		if res, no := gated(s, clusterversion.StateChecks); no {
			return res
		}
	}
	if t := activeTask(s, c.Group); t != nil {
		return refuse(slotstore.CodeConflict, "task %d is already running on group %d", t.ID, c.Group)
	}
	for _, t := range s.Tasks { // resume a failed move of the same shape
		if t.Kind == TaskReplicaMove && t.Group == c.Group && t.From == c.From && t.To == c.To && t.Status == TaskFailed {
			t.Status, t.Error, t.UpdatedAtMs = TaskRunning, "", timeMs
			t.Attempt++
			return Result{OK: true, Message: fmt.Sprintf("task %d resumed", t.ID), TaskID: t.ID}
		}
	}
	if _, ok := g.Peers[c.From]; !ok {
		return refuse(slotstore.CodeConflict, "node %d is not a desired peer of group %d", c.From, c.Group)
	}
	if _, ok := g.Peers[c.To]; ok && c.To != c.From {
		return refuse(slotstore.CodeConflict, "node %d already is a desired peer of group %d", c.To, c.Group)
	}
	to, ok := s.Nodes[c.To]
	if !ok || to.State != NodeActive {
		return refuse(slotstore.CodeConflict, "node %d is not an active node", c.To)
	}
	if c.From == c.To && len(g.Peers) < 2 {
		return refuse(slotstore.CodeFailedPrecondition, "group %d has one replica: it cannot be rebuilt in place (nothing would be left to copy from)", c.Group)
	}
	s.NextTaskID++
	t := &Task{ID: s.NextTaskID, Kind: TaskReplicaMove, Group: c.Group, From: c.From, To: c.To,
		OldReplicaID: g.Peers[c.From], NewReplicaID: s.NextReplicaID, Status: TaskRunning,
		Attempt: 1, CreatedAtMs: timeMs, UpdatedAtMs: timeMs}
	t.Phase = Phases(t)[0]
	s.NextReplicaID++
	if s.Tasks == nil {
		s.Tasks = map[uint64]*Task{}
	}
	s.Tasks[t.ID] = t
	return Result{OK: true, TaskID: t.ID}
}

func applyAdvanceTask(s *State, a *AdvanceTask, timeMs int64) Result {
	t, ok := s.Tasks[a.ID]
	if !ok {
		return refuse(slotstore.CodeNotFound, "task %d does not exist", a.ID)
	}
	if t.Status != TaskRunning && t.Status != TaskCancelling {
		return refuse(slotstore.CodeConflict, "task %d is %s", a.ID, t.Status)
	}
	if t.Phase != a.ExpectedPhase {
		return refuse(slotstore.CodeConflict, "task %d is in phase %s, not %s", a.ID, t.Phase, a.ExpectedPhase)
	}
	if a.HashSlot != nil && (t.HashSlot == nil || *t.HashSlot != *a.HashSlot) {
		return refuse(slotstore.CodeConflict, "task %d does not move hash slot %d now", a.ID, *a.HashSlot)
	}
	if a.Phase != "" {
		if r, handled := advanceSlots(s, t, a); handled {
			if !r.OK {
				return r
			}
		} else {
			if PhaseIndex(t, a.Phase) <= PhaseIndex(t, t.Phase) {
				return refuse(slotstore.CodeInvalidArgument, "phase %q does not follow %q", a.Phase, t.Phase)
			}
			if t.Kind == TaskReplicaMove && a.Phase == PhaseDone && t.Phase == PhaseCommit {
				if r := commitMove(s, t); !r.OK {
					return r
				}
			}
			if MovesSlots(t.Kind) && t.Phase == PhaseSwitch {
				if r := switchSlot(s, t); !r.OK {
					return r
				}
			}
			if (t.Kind == TaskSlotMigration || t.Kind == TaskGroupCreate) && a.Phase == PhaseDone {
				t.Status = TaskSucceeded
			}
			t.Phase = a.Phase
		}
	}
	// The record comes last: a refused step leaves the task as it was.
	if a.Observed != nil {
		rec := *a.Observed
		rec.AtMs = timeMs
		t.History = append(t.History, rec)
		if len(t.History) > 64 {
			t.History = t.History[len(t.History)-64:]
		}
	}
	if a.Cursor != nil {
		cur := *a.Cursor
		t.Cursor = &cur
	}
	progressed := false
	switch {
	case a.Phase != "" || a.Status != "":
		t.CopiedTo, t.SnapshotBytes = nil, 0 // the copy or catch-up is over (or the task)
	case a.CopiedTo != nil && !bytes.Equal(a.CopiedTo, t.CopiedTo):
		t.CopiedTo, progressed = bytes.Clone(a.CopiedTo), true
	case a.SnapshotBytes != 0 && a.SnapshotBytes != t.SnapshotBytes:
		t.SnapshotBytes, progressed = a.SnapshotBytes, true
	}
	if a.Status != "" {
		t.Status = a.Status
	}
	t.Error = a.Error
	if a.Phase != "" || a.Status != "" || progressed {
		// A record of progress within a phase keeps the phase's clock (a
		// catch-up outrun by the writes times out); rows copied further or
		// snapshot bytes received restart it (a copy of many steps, a
		// learner receiving a large group, is not stuck).
		t.UpdatedAtMs = timeMs
	}
	pruneTasks(s)
	return Result{OK: true, TaskID: t.ID}
}

// commitMove makes the move the new intent: To replaces From among the
// desired peers and the config epoch grows by one.
func commitMove(s *State, t *Task) Result {
	g, ok := s.Groups[t.Group]
	if !ok {
		return refuse(slotstore.CodeNotFound, "group %d vanished", t.Group)
	}
	delete(g.Peers, t.From)
	g.Peers[t.To] = t.NewReplicaID
	g.ConfigEpoch++
	if g.PreferredLeader == t.From {
		g.PreferredLeader = t.To
	}
	t.Status = TaskSucceeded
	return Result{OK: true}
}

// PastCancelling reports t in a phase past its point of cancelling, from
// which it only goes forward: a replica move from remove_old on (the new
// replica is a voter, the old one is being removed), a hash slot's move from
// acquire on (the target may own the slot), a group's creation at done.
func PastCancelling(t *Task) bool {
	cutoff := PhaseIndex(t, PhaseRemoveOld)
	switch t.Kind {
	case TaskSlotMigration, TaskGroupSplit, TaskGroupMerge:
		cutoff = PhaseIndex(t, PhaseAcquire)
	case TaskGroupCreate:
		cutoff = PhaseIndex(t, PhaseDone)
	}
	return PhaseIndex(t, t.Phase) >= cutoff
}

func applyCancelTask(s *State, c *CancelTask, timeMs int64) Result {
	t, ok := s.Tasks[c.ID]
	if !ok {
		return refuse(slotstore.CodeNotFound, "task %d does not exist", c.ID)
	}
	if t.Status == TaskCancelled || t.Status == TaskCancelling {
		return Result{OK: true, TaskID: t.ID}
	}
	if t.Status == TaskSucceeded || PastCancelling(t) {
		return refuse(slotstore.CodeConflict, "task %d is past the point of cancelling (phase %s, %s)", t.ID, t.Phase, t.Status)
	}
	t.Status, t.UpdatedAtMs = TaskCancelling, timeMs
	return Result{OK: true, TaskID: t.ID}
}

// pruneTasks drops the oldest finished tasks beyond MaxFinishedTasks.
func pruneTasks(s *State) {
	var finished []uint64
	for id, t := range s.Tasks {
		if t.Status == TaskSucceeded || t.Status == TaskCancelled {
			finished = append(finished, id)
		}
	}
	if over := len(finished) - MaxFinishedTasks; over > 0 {
		sort.Slice(finished, func(i, j int) bool { return finished[i] < finished[j] })
		for _, id := range finished[:over] {
			delete(s.Tasks, id)
		}
	}
}

// Wants says whether node should run a replica of group g, with which
// replica id, and whether that replica is (still) a learner: a desired peer
// runs one; so does the target of a replica move once the learner was added
// (and until the task is cancelled). Package replicas starts and stops a
// node's replicas by it; the simulator (package sim) places its nodes' by it.
func (s *State) Wants(node slotstore.NodeID, g slotstore.GroupID) (bool, uint64, bool) {
	grp, ok := s.Groups[g]
	if !ok {
		return false, 0, false // retired, or not created yet
	}
	// The target of a move runs the new replica once its learner was added
	// — on a node being rebuilt in place, instead of the old one.
	for _, t := range s.Tasks {
		if t.Group != g || t.To != node || t.Kind != TaskReplicaMove {
			continue
		}
		switch t.Status {
		case TaskRunning, TaskFailed:
			if PhaseIndex(t, t.Phase) >= PhaseIndex(t, PhaseCatchUp) {
				return true, t.NewReplicaID, PhaseIndex(t, t.Phase) <= PhaseIndex(t, PhasePromote)
			}
		}
	}
	if r, ok := grp.Peers[node]; ok {
		if _, dead := s.Tombstoned(g, r); dead {
			return false, 0, false // a recovery rebuilt the group without it (recovery.go)
		}
		return true, r, false
	}
	return false, 0, false
}
