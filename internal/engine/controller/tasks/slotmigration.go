package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// exportChunkBytes bounds one chunk of a slot copy (one Raft entry on the target).
const exportChunkBytes = 256 << 10

// slotStep does one step of a hash-slot migration, or of a split or merge
// (the same phases for each of their slots, after a split's start and
// before a merge's retirement).
func (e *Executor) slotStep(ctx context.Context, t controller.Task) error {
	if handled, err := e.splitMergeStep(ctx, t); handled {
		return err
	}
	m := slotMove{e: e, t: t, hdr: meta.Header{HashSlot: *t.HashSlot}}
	if t.Status == controller.TaskCancelling {
		if err := m.undo(ctx); err != nil {
			return err
		}
		if t.Kind == controller.TaskGroupSplit && t.Moved == 0 {
			if err := e.cfg.Node.RetireGroup(ctx, t.ToGroup); err != nil {
				return err
			}
			return e.advance(ctx, t, "", controller.TaskCancelled, "cancelled",
				m.note("imported rows dropped, fence lifted, change log gone, new group %d retired", t.ToGroup))
		}
		return e.advance(ctx, t, "", controller.TaskCancelled, "cancelled", m.note("imported rows dropped, fence lifted, change log gone"))
	}
	hs, next := *t.HashSlot, nextPhase(t)
	switch t.Phase {
	case controller.PhaseTrack:
		// What an aborted attempt left on the target goes first: rows deleted
		// at the source since would otherwise come back with the slot.
		if err := m.cmd(ctx, t.ToGroup, &meta.DropImported{Header: m.hdr}); err != nil {
			return err
		}
		if err := m.cmd(ctx, t.Group, &meta.TrackSlot{Header: m.hdr}); err != nil {
			return err
		}
		return e.advance(ctx, t, next, "", "", m.note("group %d logs the changes of hash slot %d", t.Group, hs))
	case controller.PhaseFence:
		if err := m.cmd(ctx, t.Group, &meta.FenceSlot{Header: m.hdr}); err != nil {
			return err
		}
		return e.advance(ctx, t, next, "", "", m.note("group %d refuses writes to hash slot %d", t.Group, hs))
	case controller.PhaseCopy:
		// From where the last step left it (t.CopiedTo), at most
		// copyChunksPerStep chunks a step, the position kept on the task: a
		// slot of any size moves, a step at a time, and a failover goes on
		// from the position (the rows before it were imported; a live
		// move's change log, tracked since before the copy, catches them up
		// on later changes; a fenced move has none).
		rows, chunks, after, done, err := m.copyRows(ctx, t.CopiedTo)
		if err != nil && chunks == 0 {
			return err
		}
		if !done || err != nil {
			if aerr := e.cfg.Node.Advance(ctx, controller.AdvanceTask{ID: t.ID, ExpectedPhase: t.Phase, HashSlot: t.HashSlot, CopiedTo: after}); aerr != nil {
				return aerr
			}
			return err // nil: the next step goes on
		}
		return e.advance(ctx, t, next, "", "", m.note("%d rows copied to group %d in %d chunks (this step)", rows, t.ToGroup, chunks))
	case controller.PhaseCatchUp, controller.PhaseDrain:
		// catch_up: rounds until one covers few changes (the writes go on);
		// drain: the fence is up, so the log ends: to its end.
		cur, records, rounds, err := m.catchUp(ctx, t.Phase == controller.PhaseDrain)
		if errors.Is(err, errBehind) {
			// Keep the cursor (the phase's clock keeps running: a slot
			// written faster than it is copied aborts at the phase timeout);
			// no decision: the phase did not change.
			return e.cfg.Node.Advance(ctx, controller.AdvanceTask{ID: t.ID, ExpectedPhase: t.Phase, HashSlot: t.HashSlot, Cursor: &cur,
				Observed: m.note("%d logged changes applied in %d rounds, more keep coming (cursor %d/%d)", records, rounds, cur.Index, cur.Seq)})
		}
		if err != nil {
			return err
		}
		what := fmt.Sprintf("%d logged changes applied to group %d in %d rounds", records, t.ToGroup, rounds)
		return e.advanceTask(ctx, t, controller.AdvanceTask{ID: t.ID, ExpectedPhase: t.Phase, Phase: next, HashSlot: t.HashSlot,
			Cursor: &cur, Observed: m.note("%s (cursor %d/%d)", what, cur.Index, cur.Seq)})
	case controller.PhaseAcquire:
		ch, _, err := meta.Read(ctx, e.cfg.Node, &meta.ExportSlot{HashSlot: hs, MaxBytes: 1}, meta.Linearizable)
		if err != nil {
			return err
		}
		if ch == nil {
			return fmt.Errorf("export of hash slot %d answered nothing", hs)
		}
		if err := m.cmd(ctx, t.ToGroup, &meta.AcquireSlot{Header: m.hdr, MinRevision: ch.Revision}); err != nil {
			return err
		}
		return e.advance(ctx, t, next, "", "", m.note("group %d owns hash slot %d (revision ≥ %d)", t.ToGroup, hs, ch.Revision))
	case controller.PhaseSwitch:
		return e.advance(ctx, t, afterPhase(t), "", "", m.note("HashToGroup[%d] = %d; route revision +1", hs, t.ToGroup))
	case controller.PhaseRelease:
		if err := m.cmd(ctx, t.Group, &meta.ReleaseSlot{Header: m.hdr}); err != nil {
			return err
		}
		return e.advance(ctx, t, afterPhase(t), "", "", m.note("group %d released hash slot %d and deleted its rows", t.Group, hs))
	}
	return nil
}

// nextPhase is the phase after t's in its order.
func nextPhase(t controller.Task) slotstore.TaskPhase {
	phases := controller.Phases(&t)
	if i := controller.PhaseIndex(&t, t.Phase); i >= 0 && i+1 < len(phases) {
		return phases[i+1]
	}
	return ""
}

// slotMove is the step of one hash slot's move under way.
type slotMove struct {
	e   *Executor
	t   controller.Task
	hdr meta.Header
}

func (m slotMove) note(format string, args ...any) *controller.PhaseRecord {
	return &controller.PhaseRecord{Phase: m.t.Phase, Note: fmt.Sprintf(format, args...), Voters: []uint64{}, Learners: []uint64{}}
}

// cmd replicates c through group g; a refused command is an error.
func (m slotMove) cmd(ctx context.Context, g slotstore.GroupID, c meta.Command) error {
	res, err := m.e.cfg.Node.ProposeToGroup(ctx, g, c)
	if err == nil && !res.OK() {
		err = res.Err()
	}
	return err
}

// undo takes back everything a move did before its acquire: the source's
// fence and change log first (the slot serves writes again even when the
// target is unreachable), then the target's imported rows.
func (m slotMove) undo(ctx context.Context) error {
	if err := m.undoSource(ctx); err != nil {
		return err
	}
	return m.cmd(ctx, m.t.ToGroup, &meta.DropImported{Header: m.hdr})
}

func (m slotMove) undoSource(ctx context.Context) error {
	if err := m.cmd(ctx, m.t.Group, &meta.UnfenceSlot{Header: m.hdr}); err != nil {
		return err
	}
	return m.cmd(ctx, m.t.Group, &meta.UntrackSlot{Header: m.hdr})
}

// copyChunksPerStep bounds the chunks one copy step imports (16 MiB at
// most): a step ends well within its round's deadline, and the position is
// kept on the task between steps. (A copy was one step: a slot that took
// longer to copy than the step's deadline started over every round and
// never moved.)
const copyChunksPerStep = 64

// copyRows exports the slot's rows after the key after from the source in
// bounded chunks and imports each into the target, at most
// copyChunksPerStep; it returns the last key imported (after itself when
// none) and done when the source has no more. On an error, the rows before
// the key returned were imported.
func (m slotMove) copyRows(ctx context.Context, after []byte) (rows, chunks int, last []byte, done bool, err error) {
	last = after
	for chunks < copyChunksPerStep {
		ch, _, err := meta.Read(ctx, m.e.cfg.Node, &meta.ExportSlot{HashSlot: m.hdr.HashSlot, After: last, MaxBytes: exportChunkBytes}, meta.Linearizable)
		if err != nil {
			return rows, chunks, last, false, err
		}
		if ch == nil {
			return rows, chunks, last, false, fmt.Errorf("export of hash slot %d answered nothing", m.hdr.HashSlot)
		}
		if len(ch.Rows) > 0 {
			if err := m.cmd(ctx, m.t.ToGroup, &meta.ImportRows{Header: m.hdr, Rows: ch.Rows}); err != nil {
				return rows, chunks, last, false, err
			}
			last = ch.Rows[len(ch.Rows)-1].Key
			rows += len(ch.Rows)
			chunks++
		}
		if ch.Done {
			return rows, chunks, last, true, nil
		}
	}
	return rows, chunks, last, false, nil
}

// Catch-up bounds: a round that covers at most catchUpFew logged changes
// ends the catch-up (the fenced drain is then short); at most
// catchUpRounds rounds a step, so that a slot written faster than it is
// copied does not hold the executor (the task keeps its cursor and goes on
// next round, until its phase times out and the move aborts).
const (
	catchUpFew    = 64
	catchUpRounds = 64
)

// catchUp applies the slot's logged changes after the task's cursor to the
// target, in rounds of bounded chunks: until a round covers few changes,
// or with toEnd until the log has nothing more.
func (m slotMove) catchUp(ctx context.Context, toEnd bool) (cur controller.ChangeCursor, records, rounds int, err error) {
	if m.t.Cursor != nil {
		cur = *m.t.Cursor
	}
	for rounds < catchUpRounds || toEnd {
		rounds++
		ch, _, err := meta.Read(ctx, m.e.cfg.Node, &meta.ExportChanges{HashSlot: m.hdr.HashSlot, AfterIndex: cur.Index, AfterSeq: cur.Seq,
			MaxBytes: exportChunkBytes}, meta.Linearizable)
		if err != nil {
			return cur, records, rounds, err
		}
		if ch == nil {
			return cur, records, rounds, fmt.Errorf("change export of hash slot %d answered nothing", m.hdr.HashSlot)
		}
		if len(ch.Rows) > 0 || len(ch.Deleted) > 0 {
			if err := m.cmd(ctx, m.t.ToGroup, &meta.ImportChanges{Header: m.hdr, Rows: ch.Rows, Deleted: ch.Deleted}); err != nil {
				return cur, records, rounds, err
			}
		}
		cur = controller.ChangeCursor{Index: ch.NextIndex, Seq: ch.NextSeq}
		records += ch.Records
		if ch.Done && (toEnd || ch.Records <= catchUpFew) {
			return cur, records, rounds, nil
		}
	}
	return cur, records, rounds, errBehind
}

// errBehind: a catch-up step ended its rounds with changes still coming.
var errBehind = errors.New("changes keep coming")

// afterPhase is the phase after t's: the next of its order, but after a
// slot's last phase the next slot's first for a split or merge, or after the
// last slot done (split) or retire (merge).
func afterPhase(t controller.Task) slotstore.TaskPhase {
	switch {
	case t.Phase != controller.LastSlotPhase(&t):
		return nextPhase(t)
	case t.Kind == controller.TaskSlotMigration:
		return controller.PhaseDone
	case len(t.HashSlots) > 1:
		return controller.FirstSlotPhase(&t)
	case t.Kind == controller.TaskGroupMerge:
		return controller.PhaseRetire
	}
	return controller.PhaseDone
}

// splitMergeStep does the steps of splits and merges that are not a slot's:
// a split's start (or its cancellation then: retire the new group) and a
// merge's retirement. handled reports that the step was one of these (or
// that there is nothing to do); otherwise it is a slot's.
func (e *Executor) splitMergeStep(ctx context.Context, t controller.Task) (handled bool, err error) {
	note := func(format string, args ...any) *controller.PhaseRecord {
		return &controller.PhaseRecord{Phase: t.Phase, Note: fmt.Sprintf(format, args...), Voters: []uint64{}, Learners: []uint64{}}
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
		return true, e.advance(ctx, t, controller.FirstSlotPhase(&t), "", "", rec)
	case t.Kind == controller.TaskGroupMerge && t.Phase == controller.PhaseRetire:
		return true, e.advance(ctx, t, controller.PhaseDone, "", "", note("group %d is empty: retired", t.Group))
	case t.HashSlot == nil:
		return true, nil
	}
	return false, nil
}
