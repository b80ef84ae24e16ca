package fsm

import "github.com/slotmeta/slotmeta/internal/slotstore"

// Ownership returns the hash slots this replica's group owns and, of them,
// the fenced ones (migrating out, refusing writes), as of the last committed
// Update. ok is false before Open has loaded them. Read-only: it loads the
// published atomics, so it is safe beside Update (the two sets are loaded
// one after the other, not as one snapshot).
func (s *StateMachine) Ownership() (owned, fenced []slotstore.HashSlot, ok bool) {
	o, f := s.owned.Load(), s.fenced.Load()
	if o == nil {
		return nil, nil, false
	}
	if f != nil {
		fenced = f.Slots()
	}
	return o.Slots(), fenced, true
}
