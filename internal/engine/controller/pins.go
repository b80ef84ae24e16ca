package controller

import (
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Operator pins (issue 30): the balancer must not undo what an operator
// did by hand. A manual replica move, preferred leader, split, merge or
// hash-slot migration is proposed with PinUntilMs (the operator's node
// sets it: --manual-pin, default an hour), and applying it pins the groups
// it names until then: the balancer plans nothing for a pinned group but
// drains (package balance). Pins are replicated, shown in the balancer's
// status, expire by themselves, and are released with ReleasePins.

// MaxPins bounds the pins kept (one per group at most; groups are bounded
// by the hash slots).
const MaxPins = slotstore.HashSlotCount

// Pin is one group pinned by an operator's action.
type Pin struct {
	Group   slotstore.GroupID `json:"group"`
	UntilMs int64             `json:"until_ms"`
	// Why is the action that pinned it: move, preferred_leader, split,
	// merge or slot_migration.
	Why  string `json:"why"`
	AtMs int64  `json:"at_ms"`
}

// ReleasePins releases the pins of Groups (none: every pin).
type ReleasePins struct {
	Groups []slotstore.GroupID `json:"groups,omitempty"`
}

// PinnedAt reports whether group g is pinned at timeMs.
func (s *State) PinnedAt(g slotstore.GroupID, timeMs int64) bool {
	p, ok := s.Pins[g]
	return ok && p.UntilMs > timeMs
}

// pinned lists the groups a manual command pins and why, once it applied
// with res: a split pins the new group too (its task's target), a
// migration the slot's owner (which changes only when the task commits).
func pinned(s *State, c Command, res Result) (string, []slotstore.GroupID) {
	switch {
	case c.CreateMove != nil:
		return "move", []slotstore.GroupID{c.CreateMove.Group}
	case c.SetPreferred != nil:
		return "preferred_leader", []slotstore.GroupID{c.SetPreferred.Group}
	case c.CreateSplit != nil:
		gs := []slotstore.GroupID{c.CreateSplit.Group}
		if t, ok := s.Tasks[res.TaskID]; ok && t.ToGroup != 0 {
			gs = append(gs, t.ToGroup)
		}
		return "split", gs
	case c.CreateMerge != nil:
		return "merge", []slotstore.GroupID{c.CreateMerge.Group, c.CreateMerge.Into}
	case c.SlotMigrate != nil:
		gs := []slotstore.GroupID{c.SlotMigrate.ToGroup}
		if hs := int(c.SlotMigrate.HashSlot); hs >= 0 && hs < len(s.HashToGroup) {
			gs = append(gs, s.HashToGroup[hs])
		}
		return "slot_migration", gs
	}
	return "", nil
}

// pin records the pins of an applied manual command and drops the pins
// that expired by its time.
func pin(s *State, why string, groups []slotstore.GroupID, untilMs, timeMs int64) {
	for g, p := range s.Pins {
		if p.UntilMs <= timeMs {
			delete(s.Pins, g)
		}
	}
	if untilMs <= timeMs {
		return
	}
	for _, g := range groups {
		if len(s.Pins) >= MaxPins && !s.PinnedAt(g, timeMs) {
			continue
		}
		if s.Pins == nil {
			s.Pins = map[slotstore.GroupID]Pin{}
		}
		s.Pins[g] = Pin{Group: g, UntilMs: max(untilMs, s.Pins[g].UntilMs), Why: why, AtMs: timeMs}
	}
}

func applyReleasePins(s *State, r *ReleasePins) Result {
	for g := range s.Pins {
		if len(r.Groups) == 0 || slices.Contains(r.Groups, g) {
			delete(s.Pins, g)
		}
	}
	return Result{OK: true}
}
