package controller

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// High-water marks (issue 29): what a lost-quorum recovery reports as
// lost is the recovered index against the highest index any replica of the
// group was known to have applied. The controller leader learns those
// indexes from the nodes' status reports, in memory; a controller leader
// that changes in the same fault (its node among the lost) would forget
// them, and a recovery would then report "nothing lost" for writes the
// lost majority acknowledged. So the leader records, every few seconds
// and only when they rose, the highest applied index it saw per group:
// coarse (a mark lags by up to that period) but replicated.

// HighWater raises groups' marks.
type HighWater struct {
	Marks []HighWaterMark `json:"marks"`
}

// HighWaterMark is the highest applied index seen of a group's replicas:
// Node's, reported at AtMs.
type HighWaterMark struct {
	Group slotstore.GroupID `json:"group"`
	Index uint64            `json:"index"`
	Node  slotstore.NodeID  `json:"node"`
	AtMs  int64             `json:"at_ms"`
}

// applyHighWater raises the marks of existing groups; a mark never falls
// (a recovery or retirement of the group clears it).
func applyHighWater(s *State, h *HighWater) Result {
	for _, m := range h.Marks {
		if _, ok := s.Groups[m.Group]; !ok || m.Index <= s.HighWater[m.Group].Index {
			continue
		}
		if s.HighWater == nil {
			s.HighWater = map[slotstore.GroupID]HighWaterMark{}
		}
		s.HighWater[m.Group] = m
	}
	return Result{OK: true}
}
