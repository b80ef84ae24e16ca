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

// slotStep does one step of a hash-slot migration.
func (e *Executor) slotStep(ctx context.Context, t slotstore.Task) error {
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
		return e.advance(ctx, t, controller.PhaseDone, "", "", note("group %d released hash slot %d and deleted its rows", t.Group, hs))
	}
	return nil
}
