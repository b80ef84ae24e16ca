package replicas

import (
	"cmp"
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Ownership is what one slot-group replica on this node says its group
// owns: the replicated owned hash-slot set and, of it, the fenced slots
// (migrating out), at the replica's applied index.
type Ownership struct {
	Group        slotstore.GroupID
	AppliedIndex uint64
	Owned        []slotstore.HashSlot
	Fenced       []slotstore.HashSlot
}

// Ownership reports the hash-slot ownership of every slot-group replica on
// this node whose state machine is open, in group order. It is read-only and
// cheap (it loads atomics): for invariant checks (every hash slot owned by
// exactly one group) and diagnostics.
func (s *Set) Ownership() []Ownership {
	var out []Ownership
	for id, r := range s.All() {
		m := r.SM()
		if m == nil {
			continue
		}
		applied := m.AppliedIndex()
		owned, fenced, ok := m.Ownership()
		if !ok {
			continue
		}
		out = append(out, Ownership{Group: id, AppliedIndex: applied, Owned: owned, Fenced: fenced})
	}
	slices.SortFunc(out, func(a, b Ownership) int { return cmp.Compare(a.Group, b.Group) })
	return out
}
