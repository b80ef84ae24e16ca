package controller

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Hash-slot migration: a task that moves one hash slot from the group that
// owns it to another, live — the slot keeps taking writes until the last
// catch-up. Phases, each carried out by the controller leader:
//
//	track    the source logs every change of the slot (meta/slotmove.go)
//	copy     the slot's rows go to the target in bounded chunks, through Raft
//	catch_up the logged changes follow, round after round, until a round
//	         finds few (the cursor is kept on the task)
//	fence    the source refuses writes to the slot (503 slot_migrating)
//	drain    the changes logged before the fence follow: the target now
//	         holds exactly the source's rows
//	acquire  the target owns the slot (its revision counter catches up)
//	release  the source drops the slot, its rows and its change log
//	switch   HashToGroup[slot] = target, RouteRevision+1 (this command)
//
// Release comes before the switch: until the switch every node routes the
// slot to the source, and a source that still held it would answer a read
// routed by an old table after the target took a write. Between the two the
// slot is owned by the target alone and served by nobody (wrong_group, which
// the node retries once its table moves on): a few milliseconds.
// Cancelling is possible before acquire; the executor then drops the imported
// rows, lifts the fence and stops the log. A task created before live moves
// (Live false) keeps the fenced order: fence, copy, acquire, switch, release.
const (
	TaskSlotMigration slotstore.TaskKind = "slot_migration"

	PhaseTrack   slotstore.TaskPhase = "track"
	PhaseFence   slotstore.TaskPhase = "fence"
	PhaseCopy    slotstore.TaskPhase = "copy"
	PhaseDrain   slotstore.TaskPhase = "drain"
	PhaseAcquire slotstore.TaskPhase = "acquire"
	PhaseSwitch  slotstore.TaskPhase = "switch"
	PhaseRelease slotstore.TaskPhase = "release"

	// MaxSlotMoves bounds the tasks that move hash slots at once (one per
	// group at a time: a task holds its source and target).
	MaxSlotMoves = 4
)

var (
	slotSteps       = []slotstore.TaskPhase{PhaseTrack, PhaseCopy, PhaseCatchUp, PhaseFence, PhaseDrain, PhaseAcquire, PhaseRelease, PhaseSwitch}
	legacySlotSteps = []slotstore.TaskPhase{PhaseFence, PhaseCopy, PhaseAcquire, PhaseSwitch, PhaseRelease}
)

// Phases lists the phases of t in order.
func Phases(t *Task) []slotstore.TaskPhase {
	steps := slotSteps
	if !t.Live {
		steps = legacySlotSteps
	}
	switch t.Kind {
	case TaskSlotMigration:
		return append(append([]slotstore.TaskPhase(nil), steps...), PhaseDone)
	case TaskGroupCreate:
		return groupCreatePhases
	case TaskGroupSplit:
		return append(append([]slotstore.TaskPhase{PhaseStart}, steps...), PhaseDone)
	case TaskGroupMerge:
		return append(append([]slotstore.TaskPhase(nil), steps...), PhaseRetire, PhaseDone)
	}
	if Rebuilds(t) {
		return rebuildPhases
	}
	return movePhases
}

// LastSlotPhase is the phase that ends each slot of a slot-moving task.
func LastSlotPhase(t *Task) slotstore.TaskPhase {
	if t.Live {
		return PhaseSwitch
	}
	return PhaseRelease
}

// FirstSlotPhase is where a slot-moving task starts each slot.
func FirstSlotPhase(t *Task) slotstore.TaskPhase {
	if t.Live {
		return PhaseTrack
	}
	return PhaseFence
}

// PhaseIndex is the position of phase among t's phases (-1 if unknown).
func PhaseIndex(t *Task, phase slotstore.TaskPhase) int {
	for i, p := range Phases(t) {
		if p == phase {
			return i
		}
	}
	return -1
}

// slotMoves counts the running tasks that move hash slots.
func slotMoves(s *State) int {
	n := 0
	for _, t := range s.Tasks {
		if MovesSlots(t.Kind) && (t.Status == TaskRunning || t.Status == TaskCancelling) {
			n++
		}
	}
	return n
}

// refuseBusy refuses a new slot-moving task past MaxSlotMoves.
func refuseBusy(s *State) (Result, bool) {
	if n := slotMoves(s); n >= MaxSlotMoves {
		return refuse(slotstore.CodeConflict, "%d tasks already move hash slots, the most at once", n), true
	}
	return Result{}, false
}

// CreateSlotMigration starts moving a hash slot to another group.
type CreateSlotMigration struct {
	HashSlot slotstore.HashSlot `json:"hash_slot"`
	ToGroup  slotstore.GroupID  `json:"to_group"`
}

func applyCreateSlotMigration(s *State, c *CreateSlotMigration, timeMs int64) Result {
	if !c.HashSlot.Valid() || len(s.HashToGroup) != slotstore.HashSlotCount {
		return refuse(slotstore.CodeInvalidArgument, "hash slot %d out of range", c.HashSlot)
	}
	from := s.HashToGroup[c.HashSlot]
	if _, ok := s.Groups[c.ToGroup]; !ok {
		return refuse(slotstore.CodeNotFound, "group %d does not exist", c.ToGroup)
	}
	if from == c.ToGroup {
		return refuse(slotstore.CodeConflict, "hash slot %d already belongs to group %d", c.HashSlot, c.ToGroup)
	}
	for _, g := range []slotstore.GroupID{from, c.ToGroup} {
		if t := activeTask(s, g); t != nil {
			return refuse(slotstore.CodeConflict, "task %d is already running on group %d", t.ID, g)
		}
	}
	if r, busy := refuseBusy(s); busy {
		return r
	}
	for _, t := range s.Tasks { // resume a failed migration of the same slot and target
		if t.Kind == TaskSlotMigration && t.HashSlot != nil && *t.HashSlot == c.HashSlot && t.ToGroup == c.ToGroup && t.Status == TaskFailed {
			t.Status, t.Error, t.UpdatedAtMs = TaskRunning, "", timeMs
			t.Attempt++
			t.CopiedTo = nil // the abort dropped the copied rows
			if t.Live && PhaseIndex(t, t.Phase) < PhaseIndex(t, PhaseAcquire) {
				t.Phase, t.Cursor = PhaseTrack, nil // an aborted move starts over
			}
			return Result{OK: true, TaskID: t.ID}
		}
	}
	s.NextTaskID++
	hs := c.HashSlot
	t := &Task{ID: s.NextTaskID, Kind: TaskSlotMigration, Group: from, ToGroup: c.ToGroup, HashSlot: &hs, Live: true,
		Phase: PhaseTrack, Status: TaskRunning, Attempt: 1, CreatedAtMs: timeMs, UpdatedAtMs: timeMs}
	if s.Tasks == nil {
		s.Tasks = map[uint64]*Task{}
	}
	s.Tasks[t.ID] = t
	return Result{OK: true, TaskID: t.ID}
}

// switchSlot commits the new owner of the task's slot.
func switchSlot(s *State, t *Task) Result {
	if t.HashSlot == nil || len(s.HashToGroup) != slotstore.HashSlotCount {
		return refuse(slotstore.CodeInternal, "task %d has no hash slot", t.ID)
	}
	if s.HashToGroup[*t.HashSlot] != t.Group {
		return refuse(slotstore.CodeConflict, "hash slot %d no longer belongs to group %d", *t.HashSlot, t.Group)
	}
	s.HashToGroup[*t.HashSlot] = t.ToGroup
	s.RouteRevision++
	return Result{OK: true}
}
