package fsm

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// slotApplier applies the slot commands: hash-slot migration (this file)
// and live moves (slotmove.go). The owned, fenced and tracked sets it
// changes are the applier's, persisted and published when the Update commits.
type slotApplier struct{ *applier }

// Hash-slot migration on the state machine side. The rules keep every hash
// slot owned by exactly one group at every index of every log except for the
// handover, when the target already owns it and the source still holds it
// fenced (refusing writes) until it releases it:
//
//	FenceSlot     source must own the slot
//	ImportRows    target must NOT own it (rows land under the target's prefix)
//	AcquireSlot   target must not own it yet; revision moves up to the source's
//	ReleaseSlot   source must own it fenced; ownership, fence and rows go
//	DropImported  target must not own it; imported rows go (a cancelled import)
//	UnfenceSlot   lifts the fence (a cancelled migration)
//	TrackSlot     source must own the slot: its changes are logged (slotmove.go)
//	UntrackSlot   stops that and deletes the log (ReleaseSlot does too)
//	ImportChanges target must NOT own it: rows written and deleted
//
// Each is idempotent: repeating a step that already took effect succeeds.
func (a slotApplier) applySlotCommand(c meta.SlotCommand) meta.Result {
	g, hs := a.sm.cfg.Group, c.Head().HashSlot
	refuse := func(format string, args ...any) meta.Result {
		return meta.Result{Code: slotstore.CodeConflict, Message: fmt.Sprintf("group %d, hash slot %d: ", g, hs) + fmt.Sprintf(format, args...)}
	}
	if r, ok := a.applyTracking(c, refuse); ok {
		return r
	}
	switch c := c.(type) {
	case *meta.FenceSlot:
		if !a.owned.Has(hs) {
			return refuse("cannot fence a slot the group does not own")
		}
		a.setSlot(&a.fenced, hs, true)
	case *meta.UnfenceSlot:
		a.setSlot(&a.fenced, hs, false)
	case *meta.ImportRows:
		if a.owned.Has(hs) {
			return refuse("cannot import into a slot the group owns")
		}
		prefix := meta.SlotPrefix(g, hs)
		for _, r := range c.Rows {
			if len(r.Key) < 2 || r.Key[0] == 0xFF && r.Key[1] == 0xFF {
				return refuse("import of a malformed row key")
			}
			a.put(append(append(make([]byte, 0, len(prefix)+len(r.Key)), prefix...), r.Key...), r.Value)
		}
		return meta.Result{Revision: a.revision, Message: fmt.Sprintf("%d rows imported", len(c.Rows))}
	case *meta.AcquireSlot:
		if !a.owned.Has(hs) {
			a.setSlot(&a.owned, hs, true)
		}
		a.revision = max(a.revision, c.MinRevision)
	case *meta.ReleaseSlot:
		if !a.owned.Has(hs) {
			return meta.Result{Revision: a.revision, Message: "already released"}
		}
		if !a.fenced.Has(hs) {
			return refuse("cannot release a slot that is not fenced")
		}
		a.setSlot(&a.owned, hs, false)
		a.setSlot(&a.fenced, hs, false)
		if a.tracked.Has(hs) {
			a.untrack(g, hs) // first: the rows' deletion need not be logged
		}
		a.deleteSlotRows(g, hs)
	case *meta.DropImported:
		if a.owned.Has(hs) {
			return refuse("cannot drop the rows of a slot the group owns")
		}
		a.deleteSlotRows(g, hs)
	default:
		return refuse("unknown slot command %T", c)
	}
	return meta.Result{Revision: a.revision}
}

func (a *applier) setSlot(set *meta.SlotSet, hs slotstore.HashSlot, on bool) {
	if set.Has(hs) == on {
		return
	}
	a.forgetHead(hs)
	if on {
		set[hs/8] |= 1 << (hs % 8)
	} else {
		set[hs/8] &^= 1 << (hs % 8)
	}
	a.slotsChanged = true
}

func (a slotApplier) deleteSlotRows(g slotstore.GroupID, hs slotstore.HashSlot) {
	a.delPrefix(meta.SlotPrefix(g, hs))
}

// exportSlot reads one bounded chunk of a slot's rows.
func (s reader) exportSlot(q *meta.ExportSlot) (*meta.SlotChunk, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	maxBytes := q.MaxBytes
	if maxBytes <= 0 || maxBytes > 4<<20 {
		maxBytes = 256 << 10
	}
	prefix := meta.SlotPrefix(s.cfg.Group, q.HashSlot)
	lower := prefix
	if len(q.After) > 0 {
		lower = append(append(append([]byte(nil), prefix...), q.After...), 0)
	}
	chunk := &meta.SlotChunk{Revision: s.rev.Load()}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	size := 0
	chunk.Done = true
	for it.First(); it.Valid(); it.Next() {
		if size >= maxBytes || len(chunk.Rows) >= 4096 {
			chunk.Done = false
			break
		}
		k := append([]byte(nil), it.Key()[len(prefix):]...)
		v := append([]byte(nil), it.Value()...)
		chunk.Rows = append(chunk.Rows, meta.Row{Key: k, Value: v})
		size += len(k) + len(v)
	}
	return chunk, it.Close()
}
