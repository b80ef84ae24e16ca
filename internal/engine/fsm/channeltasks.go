package fsm

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// channelTaskApplier applies the channel migration task commands.
type channelTaskApplier struct{ *applier }

func (a channelTaskApplier) taskPrefix(hs slotstore.HashSlot, ref *meta.ChanRef) []byte {
	return meta.ChannelListPrefix(a.sm.cfg.Group, hs, meta.TableChannelTask, ref.ChannelType, ref.ChannelID)
}

func (a channelTaskApplier) readChannelTask(key []byte) (*meta.ChannelTask, []byte, bool) {
	return readRowRaw(a.applier, key, meta.DecodeChannelTask)
}

func (a channelTaskApplier) writeChannelTask(key []byte, t *meta.ChannelTask) meta.Result {
	return writeRow(a.applier, key, t, &t.Revision, meta.EncodeChannelTask)
}

// createChannelTask assigns the channel's next task id. The newest task is
// the only one that can be active, so one look at it enforces "one active
// task per channel", and the history trimmed beyond MaxChannelTasksKept is
// always finished.
func (a channelTaskApplier) createChannelTask(c *meta.CreateChannelTask) meta.Result {
	if p := meta.ChannelRefProblem(c.ChannelType, c.ChannelID); p != "" {
		return invalidResult("%s", p)
	}
	switch {
	case !c.Kind.Valid():
		return invalidResult("unknown task kind %d", c.Kind)
	case c.SourceNode == 0 || c.TargetNode == 0:
		return invalidResult("source_node and target_node must be node ids (at least 1)")
	case c.SourceNode == c.TargetNode:
		return invalidResult("source_node and target_node must differ")
	}
	prefix := a.taskPrefix(c.HashSlot, &c.ChanRef)
	w := a.readWindow(prefix)
	if w.Count() > 0 {
		if last, raw, found := a.readChannelTask(seqKey(prefix, w.Last)); found && !last.Phase.Finished() {
			return refused(slotstore.CodeConflict, last.Revision, raw,
				"channel %d/%q has active task %d (%s)", c.ChannelType, c.ChannelID, last.TaskID, last.Phase)
		}
	}
	id := a.pushWindow(prefix, w, meta.MaxChannelTasksKept)
	t := &meta.ChannelTask{
		ChannelType: c.ChannelType, ChannelID: c.ChannelID, TaskID: id,
		Kind: c.Kind, SourceNode: c.SourceNode, TargetNode: c.TargetNode, Phase: meta.PhaseCreated,
		CreatedAtMs: c.TimeMs, UpdatedAtMs: c.TimeMs,
	}
	return a.writeChannelTask(seqKey(prefix, id), t)
}

func (a channelTaskApplier) existingChannelTask(hs slotstore.HashSlot, ref *meta.ChanRef, id uint64) (*meta.ChannelTask, []byte, []byte, *meta.Result) {
	if p := meta.ChannelRefProblem(ref.ChannelType, ref.ChannelID); p != "" {
		r := invalidResult("%s", p)
		return nil, nil, nil, &r
	}
	if id == 0 {
		r := invalidResult("task_id must be at least 1")
		return nil, nil, nil, &r
	}
	key := seqKey(a.taskPrefix(hs, ref), id)
	t, raw, found := a.readChannelTask(key)
	if !found {
		return nil, nil, nil, rowNotFound("channel %d/%q has no task %d", ref.ChannelType, ref.ChannelID, id)
	}
	return t, raw, key, nil
}

// advanceChannelTask is the compare-and-set phase step.
func (a channelTaskApplier) advanceChannelTask(c *meta.AdvanceChannelTask) meta.Result {
	if !meta.PhaseStepOK(c.ExpectedPhase, c.Phase) {
		return invalidResult("phase %s does not follow %s", c.Phase, c.ExpectedPhase)
	}
	if len(c.Note) > meta.MaxTaskNoteBytes {
		return invalidResult("note is over %d bytes", meta.MaxTaskNoteBytes)
	}
	t, raw, key, res := a.existingChannelTask(c.HashSlot, &c.ChanRef, c.TaskID)
	if res != nil {
		return *res
	}
	if t.Phase != c.ExpectedPhase {
		return refused(slotstore.CodeConflict, t.Revision, raw,
			"task %d is %s, expected %s", t.TaskID, t.Phase, c.ExpectedPhase)
	}
	t.Phase, t.UpdatedAtMs = c.Phase, c.TimeMs
	if c.Note != "" {
		t.Note = c.Note
	}
	if t.Phase == meta.PhaseDone {
		t.FinishedAtMs = c.TimeMs
	}
	return a.writeChannelTask(key, t)
}

// abortChannelTask aborts a task that is not done; aborting an aborted task
// answers it unchanged.
func (a channelTaskApplier) abortChannelTask(c *meta.AbortChannelTask) meta.Result {
	if len(c.Note) > meta.MaxTaskNoteBytes {
		return invalidResult("note is over %d bytes", meta.MaxTaskNoteBytes)
	}
	t, raw, key, res := a.existingChannelTask(c.HashSlot, &c.ChanRef, c.TaskID)
	if res != nil {
		return *res
	}
	switch t.Phase {
	case meta.PhaseDone:
		return refused(slotstore.CodeConflict, t.Revision, raw, "task %d is done and cannot be aborted", t.TaskID)
	case meta.PhaseAborted:
		return unchangedResult(t.Revision, raw)
	}
	t.Phase, t.UpdatedAtMs, t.FinishedAtMs = meta.PhaseAborted, c.TimeMs, c.TimeMs
	if c.Note != "" {
		t.Note = c.Note
	}
	return a.writeChannelTask(key, t)
}

func (s reader) getChannelTask(q *meta.GetChannelTask) (*meta.ChannelTask, error) {
	if err := s.checkRouted(q.HashSlot, q.ChannelID); err != nil {
		return nil, err
	}
	if q.TaskID == 0 { // number 0 is the window record, not a task
		return nil, nil
	}
	return getRow(s, meta.ChannelTaskKey(s.cfg.Group, q.HashSlot, q.ChannelType, q.ChannelID, q.TaskID), meta.DecodeChannelTask)
}

// listChannelTasks lists a channel's tasks newest first.
func (s reader) listChannelTasks(q *meta.ListChannelTasks) (*meta.ChannelTaskPage, error) {
	if err := s.checkRouted(q.HashSlot, q.ChannelID); err != nil {
		return nil, err
	}
	prefix := meta.ChannelListPrefix(s.cfg.Group, q.HashSlot, meta.TableChannelTask, q.ChannelType, q.ChannelID)
	page := &meta.ChannelTaskPage{}
	var err error
	_, page.Items, page.More, err = seqPage(s, prefix, q.BeforeID, scanLimit(q.Limit), meta.DecodeChannelTask)
	if err != nil {
		return nil, err
	}
	return page, nil
}
