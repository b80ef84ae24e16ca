package fsm_test

import (
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

var taskRef = meta.ChanRef{ChannelType: 1, ChannelID: "mig"}

func createTask(at int64) *meta.CreateChannelTask {
	return &meta.CreateChannelTask{Header: hdr("mig", "", at), ChanRef: taskRef, Kind: meta.ChannelReplicaMove, SourceNode: 1, TargetNode: 2}
}

func advanceTask(id uint64, from, to meta.TaskPhase) *meta.AdvanceChannelTask {
	return &meta.AdvanceChannelTask{Header: hdr("mig", "", 50), ChanRef: taskRef, TaskID: id, ExpectedPhase: from, Phase: to}
}

func abortTask(id uint64) *meta.AbortChannelTask {
	return &meta.AbortChannelTask{Header: hdr("mig", "", 60), ChanRef: taskRef, TaskID: id, Note: "operator"}
}

func decodeTask(tb testing.TB, r meta.Result) *meta.ChannelTask {
	tb.Helper()
	if !r.OK() {
		tb.Fatalf("%s: %s", r.Code, r.Message)
	}
	t, err := meta.DecodeChannelTask(r.Value)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

func listTasks(tb testing.TB, s *fsm.StateMachine, limit int) []uint64 {
	tb.Helper()
	q := &meta.ListChannelTasks{HashSlot: slotstore.HashSlotOfString("mig"), ChanRef: taskRef, Limit: limit}
	var ids []uint64
	for {
		v, err := s.Lookup(q)
		if err != nil {
			tb.Fatal(err)
		}
		p := v.(*meta.ChannelTaskPage)
		for _, t := range p.Items {
			ids = append(ids, t.TaskID)
		}
		if !p.More {
			return ids
		}
		q.BeforeID = p.Items[len(p.Items)-1].TaskID
	}
}

func TestChannelTaskLifecycle(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())

	t1 := decodeTask(t, apply(t, s, 1, createTask(10))[0])
	if t1.TaskID != 1 || t1.Phase != meta.PhaseCreated || t1.CreatedAtMs != 10 || t1.FinishedAtMs != 0 {
		t.Fatalf("created %+v", t1)
	}
	unchanged(t, db, 1, "a second task while one is active", func() {
		wantCode(t, apply(t, s, 2, createTask(20))[0], slotstore.CodeConflict)
	})
	// Another channel (same id, other type) has its own tasks and counter.
	other := createTask(10)
	other.ChannelType = 9
	if tk := decodeTask(t, apply(t, s, 3, other)[0]); tk.TaskID != 1 {
		t.Fatalf("another channel's first task is %d", tk.TaskID)
	}

	unchanged(t, db, 1, "refused steps", func() {
		wantCode(t, apply(t, s, 4, advanceTask(1, meta.PhaseCopying, meta.PhaseCatchingUp))[0], slotstore.CodeConflict)     // not in expected
		wantCode(t, apply(t, s, 5, advanceTask(1, meta.PhaseCopying, meta.PhaseCreated))[0], slotstore.CodeInvalidArgument) // backwards
		wantCode(t, apply(t, s, 6, advanceTask(1, meta.PhaseCreated, meta.PhaseCreated))[0], slotstore.CodeInvalidArgument) // no step
		wantCode(t, apply(t, s, 7, advanceTask(1, meta.PhaseCreated, meta.PhaseAborted))[0], slotstore.CodeInvalidArgument) // abort is its own command
		wantCode(t, apply(t, s, 8, advanceTask(9, meta.PhaseCreated, meta.PhaseCopying))[0], slotstore.CodeNotFound)        // no such task
		wantCode(t, apply(t, s, 9, advanceTask(0, meta.PhaseCreated, meta.PhaseCopying))[0], slotstore.CodeInvalidArgument) // the counter's number
		wantCode(t, apply(t, s, 10, &meta.CreateChannelTask{Header: hdr("mig", "", 1), ChanRef: taskRef, Kind: 9, SourceNode: 1, TargetNode: 2})[0],
			slotstore.CodeInvalidArgument)
		wantCode(t, apply(t, s, 11, &meta.CreateChannelTask{Header: hdr("mig", "", 1), ChanRef: taskRef, Kind: meta.ChannelLeaderTransfer, SourceNode: 1, TargetNode: 1})[0],
			slotstore.CodeInvalidArgument)
	})
	step := advanceTask(1, meta.PhaseCreated, meta.PhaseCopying)
	step.Note = "copying 3 segments"
	tk := decodeTask(t, apply(t, s, 12, step)[0])
	if tk.Phase != meta.PhaseCopying || tk.Note != "copying 3 segments" || tk.UpdatedAtMs != 50 {
		t.Fatalf("advanced %+v", tk)
	}
	// A skip forward is a step; reaching done finishes the task.
	decodeTask(t, apply(t, s, 13, advanceTask(1, meta.PhaseCopying, meta.PhaseSwitching))[0])
	tk = decodeTask(t, apply(t, s, 14, advanceTask(1, meta.PhaseSwitching, meta.PhaseDone))[0])
	if tk.Phase != meta.PhaseDone || tk.FinishedAtMs != 50 || tk.Note != "copying 3 segments" {
		t.Fatalf("done %+v", tk)
	}
	unchanged(t, db, 1, "steps of a finished task", func() {
		wantCode(t, apply(t, s, 15, advanceTask(1, meta.PhaseSwitching, meta.PhaseDone))[0], slotstore.CodeConflict)
		wantCode(t, apply(t, s, 16, abortTask(1))[0], slotstore.CodeConflict)
	})

	// The next task gets the next id; abort; abort again is unchanged.
	t2 := decodeTask(t, apply(t, s, 17, createTask(70))[0])
	if t2.TaskID != 2 {
		t.Fatalf("second task id %d", t2.TaskID)
	}
	tk = decodeTask(t, apply(t, s, 18, abortTask(2))[0])
	if tk.Phase != meta.PhaseAborted || tk.FinishedAtMs != 60 || tk.Note != "operator" {
		t.Fatalf("aborted %+v", tk)
	}
	unchanged(t, db, 1, "aborting an aborted task", func() {
		if again := decodeTask(t, apply(t, s, 19, abortTask(2))[0]); again.Revision != tk.Revision {
			t.Fatalf("abort again answered %+v", again)
		}
		wantCode(t, apply(t, s, 20, advanceTask(2, meta.PhaseCreated, meta.PhaseCopying))[0], slotstore.CodeConflict)
	})
	if got := listTasks(t, s, 1); fmt.Sprint(got) != "[2 1]" {
		t.Fatalf("tasks %v", got)
	}
	if v, _ := s.Lookup(&meta.GetChannelTask{HashSlot: slotstore.HashSlotOfString("mig"), ChanRef: taskRef, TaskID: 0}); v.(*meta.ChannelTask) != nil {
		t.Fatal("task 0 (the counter) reads as a task")
	}
}

func TestChannelTaskHistoryIsBounded(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	total := meta.MaxChannelTasksKept + 5
	idx := uint64(0)
	for i := 1; i <= total; i++ {
		idx++
		// Create and abort in one entry: one batch.
		rs := mustOK(t, apply(t, s, idx, createTask(int64(i)), abortTask(uint64(i))))
		if tk := decodeTask(t, rs[0]); tk.TaskID != uint64(i) {
			t.Fatalf("task %d got id %d", i, tk.TaskID)
		}
	}
	if n := countTable(t, db, 1, meta.TableChannelTask); n != meta.MaxChannelTasksKept+1 { // + the counter record
		t.Fatalf("%d task rows, want %d and the counter", n, meta.MaxChannelTasksKept)
	}
	ids := listTasks(t, s, 7)
	if len(ids) != meta.MaxChannelTasksKept || ids[0] != uint64(total) || ids[len(ids)-1] != uint64(total-meta.MaxChannelTasksKept+1) {
		t.Fatalf("kept %d tasks from %d down to %d", len(ids), ids[0], ids[len(ids)-1])
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]-1 {
			t.Fatalf("tasks not newest first: %v", ids)
		}
	}
}
