package controller

import (
	"fmt"
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Splits and merges: tasks that move a set of hash slots between groups one
// slot at a time, each slot through the phases of a hash-slot migration
// (track … release, slotmigration.go).
//
//	split  start (the new group's intent is committed with the task; wait
//	       for its leader and voters), then every slot of HashSlots from
//	       Group to the new ToGroup, then done
//	merge  every slot Group owns into ToGroup, then retire (Group, empty
//	       now, leaves the intent in the same command), then done
//
// After a slot's last phase the task goes back to track with the next slot
// (HashSlot = HashSlots[0]); the slot is part of the compare-and-set, so a
// repeated step of an earlier slot changes nothing. Cancelling is possible
// while the current slot is before its acquire: its copy is dropped and its
// fence lifted; slots already moved stay where they are, and a split that
// moved none retires its new group.
const (
	TaskGroupSplit slotstore.TaskKind = "group_split"
	TaskGroupMerge slotstore.TaskKind = "group_merge"

	PhaseRetire slotstore.TaskPhase = "retire" // merge: the emptied group is retired
)

// SlotMovesOff is the refusal of a task that moves hash slots on a node
// started with them turned off.
func SlotMovesOff() error {
	return slotstore.Errorf(slotstore.CodePermissionDenied,
		"hash-slot moves are turned off on this node (--enable-hash-slot-migration=false)")
}

// MovesSlots reports whether tasks of kind move hash slots through the
// migration phases.
func MovesSlots(kind slotstore.TaskKind) bool {
	return kind == TaskSlotMigration || kind == TaskGroupSplit || kind == TaskGroupMerge
}

// CreateSplit moves HashSlots (default: the upper half of Group's slots)
// from Group into a new group on Peers (default: the least loaded nodes).
type CreateSplit struct {
	Group     slotstore.GroupID    `json:"group"`
	HashSlots []slotstore.HashSlot `json:"hash_slots,omitempty"`
	Peers     []slotstore.NodeID   `json:"peers,omitempty"`
}

// CreateMerge moves every hash slot of Group into Into and retires Group.
type CreateMerge struct {
	Group slotstore.GroupID `json:"group"`
	Into  slotstore.GroupID `json:"into"`
}

// slotsOf lists the hash slots g owns, in order (none before bootstrap).
func (s *State) slotsOf(g slotstore.GroupID) []slotstore.HashSlot {
	t, err := s.Table()
	if err != nil {
		return nil
	}
	return t.SlotsOf(g)
}

func applyCreateSplit(s *State, c *CreateSplit, timeMs int64) Result {
	if _, ok := s.Groups[c.Group]; !ok {
		return refuse(slotstore.CodeNotFound, "group %d does not exist", c.Group)
	}
	if t := activeTask(s, c.Group); t != nil {
		return refuse(slotstore.CodeConflict, "task %d is already running on group %d", t.ID, c.Group)
	}
	if r, busy := refuseBusy(s); busy {
		return r
	}
	owned := s.slotsOf(c.Group)
	slots := slices.Clone(c.HashSlots)
	if len(slots) == 0 {
		slots = owned[(len(owned)+1)/2:]
	}
	slices.Sort(slots)
	if len(slots) == 0 || len(slots) >= len(owned) {
		return refuse(slotstore.CodeConflict, "group %d owns %d hash slots: a split moves at least one and leaves at least one", c.Group, len(owned))
	}
	for i, hs := range slots {
		if !hs.Valid() || !slices.Contains(owned, hs) {
			return refuse(slotstore.CodeInvalidArgument, "hash slot %d is not owned by group %d", hs, c.Group)
		}
		if i > 0 && slots[i-1] == hs {
			return refuse(slotstore.CodeInvalidArgument, "hash slot %d is named twice", hs)
		}
	}
	r := applyCreateGroup(s, &CreateGroup{Peers: c.Peers}, timeMs)
	if !r.OK {
		return r
	}
	t := s.Tasks[r.TaskID] // the group_create task just made: it becomes the split
	to := t.Group
	first := slots[0]
	t.Kind, t.Group, t.ToGroup, t.HashSlots, t.HashSlot, t.Live = TaskGroupSplit, c.Group, to, slots, &first, true
	return Result{OK: true, TaskID: t.ID, Message: fmt.Sprintf("splitting %d hash slots of group %d into new group %d", len(slots), c.Group, to)}
}

func applyCreateMerge(s *State, c *CreateMerge, timeMs int64) Result {
	for _, g := range []slotstore.GroupID{c.Group, c.Into} {
		if _, ok := s.Groups[g]; !ok {
			return refuse(slotstore.CodeNotFound, "group %d does not exist", g)
		}
		if t := activeTask(s, g); t != nil {
			return refuse(slotstore.CodeConflict, "task %d is already running on group %d", t.ID, g)
		}
	}
	if c.Group == c.Into {
		return refuse(slotstore.CodeInvalidArgument, "a group cannot merge into itself")
	}
	if r, busy := refuseBusy(s); busy {
		return r
	}
	slots := s.slotsOf(c.Group)
	s.NextTaskID++
	t := &Task{ID: s.NextTaskID, Kind: TaskGroupMerge, Group: c.Group, ToGroup: c.Into, HashSlots: slots, Live: true,
		Phase: PhaseTrack, Status: TaskRunning, Attempt: 1, CreatedAtMs: timeMs, UpdatedAtMs: timeMs}
	if len(slots) > 0 {
		first := slots[0]
		t.HashSlot = &first
	} else {
		t.Phase = PhaseRetire
	}
	if s.Tasks == nil {
		s.Tasks = map[uint64]*Task{}
	}
	s.Tasks[t.ID] = t
	return Result{OK: true, TaskID: t.ID, Message: fmt.Sprintf("merging %d hash slots of group %d into group %d", len(slots), c.Group, c.Into)}
}

// advanceSlots handles the phase changes of splits and merges that are
// not a plain step forward: after a slot's release, on to the next slot
// (back to fence) or to what follows the last; a merge's retirement.
// handled reports whether it applied the change.
func advanceSlots(s *State, t *Task, a *AdvanceTask) (r Result, handled bool) {
	if t.Kind != TaskGroupSplit && t.Kind != TaskGroupMerge {
		return Result{}, false
	}
	switch {
	case t.Phase == LastSlotPhase(t):
		if t.Phase == PhaseSwitch {
			if r := switchSlot(s, t); !r.OK {
				return r, true
			}
		}
		rest := t.HashSlots
		if len(rest) > 0 {
			rest = rest[1:]
		}
		want := FirstSlotPhase(t)
		switch {
		case len(rest) == 0 && t.Kind == TaskGroupMerge:
			want = PhaseRetire
		case len(rest) == 0:
			want = PhaseDone
		}
		if a.Phase != want {
			return refuse(slotstore.CodeInvalidArgument, "task %d has %d hash slots left to move: next is %s, not %s", t.ID, len(rest), want, a.Phase), true
		}
		t.HashSlots, t.Moved, t.Phase, t.HashSlot, t.Cursor, t.CopiedTo = rest, t.Moved+1, want, nil, nil, nil
		if len(rest) > 0 {
			next := rest[0]
			t.HashSlot = &next
		}
		if want == PhaseDone {
			t.Status = TaskSucceeded
		}
		return Result{OK: true}, true
	case t.Kind == TaskGroupMerge && t.Phase == PhaseRetire && a.Phase == PhaseDone:
		if len(s.slotsOf(t.Group)) > 0 {
			return refuse(slotstore.CodeConflict, "group %d still owns hash slots", t.Group), true
		}
		if _, ok := s.Groups[t.Group]; ok {
			delete(s.Groups, t.Group)
			retire(s, t.Group)
		}
		t.Phase, t.Status = PhaseDone, TaskSucceeded
		return Result{OK: true}, true
	}
	return Result{}, false
}
