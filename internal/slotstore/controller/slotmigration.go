package controller

import (
	"slotmeta/internal/slotstore"
)

// Hash-slot migration: a task that moves one hash slot from the group that
// owns it to another. Phases, each carried out by the controller leader:
//
//	fence   the source refuses writes to the slot (503 slot_migrating)
//	copy    the slot's rows go to the target in bounded chunks, through Raft
//	acquire the target owns the slot (its revision counter catches up)
//	switch  HashToGroup[slot] = target, RouteRevision+1 (this command)
//	release the source drops the slot and its rows
//
// Cancelling is possible while fencing or copying; the executor then drops
// the imported rows and lifts the fence.
const (
	TaskSlotMigration = "slot_migration"

	PhaseFence   = "fence"
	PhaseCopy    = "copy"
	PhaseAcquire = "acquire"
	PhaseSwitch  = "switch"
	PhaseRelease = "release"
)

var slotPhases = []string{PhaseFence, PhaseCopy, PhaseAcquire, PhaseSwitch, PhaseRelease, PhaseDone}

// TaskPhaseIndex is the position of phase in the task's kind (-1 if unknown).
func TaskPhaseIndex(kind, phase string) int {
	list := movePhases
	switch kind {
	case TaskSlotMigration:
		list = slotPhases
	case TaskGroupCreate:
		list = groupCreatePhases
	case TaskGroupSplit:
		list = splitPhases
	case TaskGroupMerge:
		list = mergePhases
	}
	for i, p := range list {
		if p == phase {
			return i
		}
	}
	return -1
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
	for _, t := range s.Tasks { // resume a failed migration of the same slot and target
		if t.Kind == TaskSlotMigration && t.HashSlot != nil && *t.HashSlot == c.HashSlot && t.ToGroup == c.ToGroup && t.Status == TaskFailed {
			t.Status, t.Error, t.UpdatedAtMs = TaskRunning, "", timeMs
			t.Attempt++
			return Result{OK: true, TaskID: t.ID}
		}
	}
	s.NextTaskID++
	hs := c.HashSlot
	t := &Task{ID: s.NextTaskID, Kind: TaskSlotMigration, Group: from, ToGroup: c.ToGroup, HashSlot: &hs,
		Phase: PhaseFence, Status: TaskRunning, Attempt: 1, CreatedAtMs: timeMs, UpdatedAtMs: timeMs}
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
