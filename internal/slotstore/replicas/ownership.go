package cluster

import (
	"cmp"
	"slices"

	"slotmeta/internal/slotstore"
)

// ReplicaOwnership is what one slot-group replica on this node says its
// group owns: the replicated owned hash-slot set and, of it, the fenced
// slots (migrating out), at the replica's applied index.
type ReplicaOwnership struct {
	Group        slotstore.GroupID
	AppliedIndex uint64
	Owned        []slotstore.HashSlot
	Fenced       []slotstore.HashSlot
}

// Ownership reports the hash-slot ownership of every slot-group replica on
// this node whose state machine is open, in group order. It is read-only and
// cheap (it loads atomics): for invariant checks (every hash slot owned by
// exactly one group) and diagnostics.
func (n *Node) Ownership() []ReplicaOwnership {
	var out []ReplicaOwnership
	for id, lg := range *n.groups.Load() {
		s := lg.sm.Load()
		if s == nil {
			continue
		}
		applied := s.AppliedIndex()
		owned, fenced, ok := s.Ownership()
		if !ok {
			continue
		}
		out = append(out, ReplicaOwnership{Group: id, AppliedIndex: applied, Owned: owned, Fenced: fenced})
	}
	slices.SortFunc(out, func(a, b ReplicaOwnership) int { return cmp.Compare(a.Group, b.Group) })
	return out
}
