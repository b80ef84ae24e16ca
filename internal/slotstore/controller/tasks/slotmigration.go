package tasks

import (
	"context"
	"fmt"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/meta"
)

// exportChunkBytes bounds one chunk of a slot copy (one Raft entry on the target).
const exportChunkBytes = 256 << 10

// slotStep does one step of a hash-slot migration, or of a split or merge
// (the same phases for each of their slots, after a split's start and
// before a merge's retirement).
func (e *Executor) slotStep(ctx context.Context, t slotstore.Task) error {
	if handled, err := e.splitMergeStep(ctx, t); handled {
		return err
	}
	hs := *t.HashSlot
	hdr := meta.Header{HashSlot: hs}
	note := func(format string, args ...any) *slotstore.PhaseRecord {
		return &slotstore.PhaseRecord{Phase: t.Phase, Note: fmt.Sprintf(format, args...), Voters: []uint64{}, Learners: []uint64{}}
	}
	slotCmd := func(g slotstore.GroupID, c meta.Command) error {
		res, err := e.cfg.Node.ProposeToGroup(ctx, g, c)
		if err == nil && !res.OK() {
			err = res.Err()
		}
		return err
	}
	if t.Status == controller.TaskCancelling {
		if err := slotCmd(t.ToGroup, &meta.DropImported{Header: hdr}); err != nil {
			return err
		}
		if err := slotCmd(t.Group, &meta.UnfenceSlot{Header: hdr}); err != nil {
			return err
		}
		if t.Kind == controller.TaskGroupSplit && t.Moved == 0 {
			if err := e.cfg.Node.RetireGroup(ctx, t.ToGroup); err != nil {
				return err
			}
			return e.advance(ctx, t, "", controller.TaskCancelled, "cancelled",
				note("imported rows dropped, fence lifted, new group %d retired", t.ToGroup))
		}
		return e.advance(ctx, t, "", controller.TaskCancelled, "cancelled", note("imported rows dropped, fence lifted"))
	}
	switch t.Phase {
	case controller.PhaseFence:
		if err := slotCmd(t.Group, &meta.FenceSlot{Header: hdr}); err != nil {
			return err
		}
		return e.advance(ctx, t, controller.PhaseCopy, "", "", note("group %d refuses writes to hash slot %d", t.Group, hs))
	case controller.PhaseCopy:
		// The slot is fenced: its rows no longer change, so a copy from the
		// start is always complete and repeating it after a failover is safe.
		var after []byte
		rows, chunks := 0, 0
		for {
			ch, _, err := meta.Read(ctx, e.cfg.Node, &meta.ExportSlot{HashSlot: hs, After: after, MaxBytes: exportChunkBytes}, meta.Linearizable)
			if err != nil {
				return err
			}
			if ch == nil {
				return fmt.Errorf("export of hash slot %d answered nothing", hs)
			}
			if len(ch.Rows) > 0 {
				if err := slotCmd(t.ToGroup, &meta.ImportRows{Header: hdr, Rows: ch.Rows}); err != nil {
					return err
				}
				after = ch.Rows[len(ch.Rows)-1].Key
				rows += len(ch.Rows)
				chunks++
			}
			if ch.Done {
				break
			}
		}
		return e.advance(ctx, t, controller.PhaseAcquire, "", "", note("%d rows copied to group %d in %d chunks", rows, t.ToGroup, chunks))
	case controller.PhaseAcquire:
		ch, _, err := meta.Read(ctx, e.cfg.Node, &meta.ExportSlot{HashSlot: hs, MaxBytes: 1}, meta.Linearizable)
		if err != nil {
			return err
		}
		if ch == nil {
			return fmt.Errorf("export of hash slot %d answered nothing", hs)
		}
		if err := slotCmd(t.ToGroup, &meta.AcquireSlot{Header: hdr, MinRevision: ch.Revision}); err != nil {
			return err
		}
		return e.advance(ctx, t, controller.PhaseSwitch, "", "", note("group %d owns hash slot %d (revision ≥ %d)", t.ToGroup, hs, ch.Revision))
	case controller.PhaseSwitch:
		return e.advance(ctx, t, controller.PhaseRelease, "", "", note("HashToGroup[%d] = %d; route revision +1", hs, t.ToGroup))
	case controller.PhaseRelease:
		if err := slotCmd(t.Group, &meta.ReleaseSlot{Header: hdr}); err != nil {
			return err
		}
		return e.advance(ctx, t, afterRelease(t), "", "", note("group %d released hash slot %d and deleted its rows", t.Group, hs))
	}
	return nil
}

// afterRelease is the phase after a slot's release: done for a migration;
// for a split or merge the next slot's fence, or after the last, done
// (split) or retire (merge).
func afterRelease(t slotstore.Task) string {
	switch {
	case t.Kind == controller.TaskSlotMigration:
		return controller.PhaseDone
	case len(t.HashSlots) > 1:
		return controller.PhaseFence
	case t.Kind == controller.TaskGroupMerge:
		return controller.PhaseRetire
	}
	return controller.PhaseDone
}

// splitMergeStep does the steps of splits and merges that are not a slot's:
// a split's start (or its cancellation then: retire the new group) and a
// merge's retirement. handled reports that the step was one of these (or
// that there is nothing to do); otherwise it is a slot's.
func (e *Executor) splitMergeStep(ctx context.Context, t slotstore.Task) (handled bool, err error) {
	note := func(format string, args ...any) *slotstore.PhaseRecord {
		return &slotstore.PhaseRecord{Phase: t.Phase, Note: fmt.Sprintf(format, args...), Voters: []uint64{}, Learners: []uint64{}}
	}
	switch {
	case t.Kind == controller.TaskGroupSplit && t.Phase == controller.PhaseStart && t.Status == controller.TaskCancelling:
		if err := e.cfg.Node.RetireGroup(ctx, t.ToGroup); err != nil {
			return true, err
		}
		return true, e.advance(ctx, t, "", controller.TaskCancelled, "cancelled", note("new group %d retired", t.ToGroup))
	case t.Kind == controller.TaskGroupSplit && t.Phase == controller.PhaseStart:
		rec, err := e.running(ctx, t.ToGroup, t.Phase)
		if err != nil {
			return true, err
		}
		return true, e.advance(ctx, t, controller.PhaseFence, "", "", rec)
	case t.Kind == controller.TaskGroupMerge && t.Phase == controller.PhaseRetire:
		return true, e.advance(ctx, t, controller.PhaseDone, "", "", note("group %d is empty: retired", t.Group))
	case t.HashSlot == nil:
		return true, nil
	}
	return false, nil
}
