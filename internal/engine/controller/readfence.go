package controller

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

// Read fences (issue 52). A state check that finds a group's replicas
// differing with no majority — no digest held by more than half of them —
// cannot tell which replica is right, so nothing is fenced or rebuilt
// automatically; instead the group's reads are refused on every node
// (failed_precondition) while its writes go on, so that no client reads
// rows that may be wrong. The fence is replicated state, set by the
// controller leader with the check that found it and lifted by the next
// check that finds every replica agreeing (after an operator rebuilt the
// wrong ones from the right one).

// ReadFence is why a group's reads are refused.
type ReadFence struct {
	CheckID uint64 `json:"check_id"`
	Reason  string `json:"reason"`
	AtMs    int64  `json:"at_ms"`
}

// FenceReads fences Group's reads, for the check CheckID that found its
// replicas differing with no majority.
type FenceReads struct {
	Group   slotstore.GroupID `json:"group"`
	CheckID uint64            `json:"check_id"`
	Reason  string            `json:"reason"`
}

// LiftReadFence lifts Group's read fence: check CheckID found every
// replica agreeing.
type LiftReadFence struct {
	Group   slotstore.GroupID `json:"group"`
	CheckID uint64            `json:"check_id"`
}

func applyFenceReads(s *State, c *FenceReads, timeMs int64) Result {
	if res, no := gated(s, clusterversion.StateChecks); no {
		return res
	}
	g, ok := s.Groups[c.Group]
	if !ok {
		return refuse(slotstore.CodeNotFound, "group %d does not exist", c.Group)
	}
	// Replaced whole, never changed in place: a Clone shares it.
	g.ReadFence = &ReadFence{CheckID: c.CheckID, Reason: c.Reason, AtMs: timeMs}
	return Result{OK: true}
}

func applyLiftReadFence(s *State, c *LiftReadFence) Result {
	if res, no := gated(s, clusterversion.StateChecks); no {
		return res
	}
	g, ok := s.Groups[c.Group]
	if !ok {
		return refuse(slotstore.CodeNotFound, "group %d does not exist", c.Group)
	}
	g.ReadFence = nil
	return Result{OK: true}
}

// ReadsFenced is why g's reads are refused (nil: they are not).
func (s *State) ReadsFenced(g slotstore.GroupID) *ReadFence {
	if grp, ok := s.Groups[g]; ok {
		return grp.ReadFence
	}
	return nil
}
