package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

func command(t *testing.T, c Command) []byte {
	t.Helper()
	c.TimeMs = 2000
	b, err := EncodeCommand(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCreateAndRetireGroups: a created group lands on the least loaded
// nodes with fresh replica ids and no slots; ids are never reused, also
// after a retirement; retiring is refused while a group owns a slot or is
// the last one, and a retired group's id is remembered.
func TestCreateAndRetireGroups(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	if r := update(t, s, 1, bootstrapCmd(t, 5, 2, 3)); !r.OK { // group 1 on 1,2,3; group 2 on 2,3,4
		t.Fatalf("bootstrap: %+v", r)
	}
	r := update(t, s, 2, command(t, Command{CreateGroup: &CreateGroup{}}))
	if !r.OK || r.TaskID == 0 {
		t.Fatalf("create: %+v", r)
	}
	st := s.Snapshot()
	g3 := st.Groups[3]
	if g3 == nil || g3.ConfigEpoch != 1 {
		t.Fatalf("group 3: %+v", g3)
	}
	// Replicas: node 1 has 1, nodes 2 and 3 have 2, node 4 has 1, node 5 none.
	if got := g3.PeerNodes(); len(got) != 3 || got[0] != 1 || got[1] != 4 || got[2] != 5 {
		t.Fatalf("group 3 placed on %v, want the least loaded [1 4 5]", got)
	}
	for n, rid := range g3.Peers {
		if rid < 6 {
			t.Fatalf("node %d got replica id %d, which the founding replicas may use", n, rid)
		}
	}
	if tk := st.Tasks[r.TaskID]; tk.Kind != TaskGroupCreate || tk.Group != 3 || tk.Phase != PhaseStart || tk.Status != TaskRunning {
		t.Fatalf("task: %+v", tk)
	}
	for _, bad := range [][]slotstore.NodeID{{1, 2}, {1, 1, 2}, {1, 2, 9}} {
		if r := update(t, s, 3, command(t, Command{CreateGroup: &CreateGroup{Peers: bad}})); r.OK || r.Code != slotstore.CodeInvalidArgument {
			t.Fatalf("create on %v: %+v", bad, r)
		}
	}
	// Retiring: refused for a group that owns slots, and (still running) for one being created.
	if r := update(t, s, 4, command(t, Command{RetireGroup: &RetireGroup{Group: 1}})); r.OK || r.Code != slotstore.CodeConflict {
		t.Fatalf("retire group 1 (owns slots): %+v", r)
	}
	if r := update(t, s, 5, command(t, Command{RetireGroup: &RetireGroup{Group: 3}})); r.OK || r.Code != slotstore.CodeConflict {
		t.Fatalf("retire group 3 while its creation runs: %+v", r)
	}
	// Cancelled, its creation retires it; then the id is remembered.
	if r := update(t, s, 6, command(t, Command{CancelTask: &CancelTask{ID: r.TaskID}})); !r.OK {
		t.Fatalf("cancel: %+v", r)
	}
	if r := update(t, s, 7, command(t, Command{RetireGroup: &RetireGroup{Group: 3}})); !r.OK {
		t.Fatalf("retire group 3 after the cancel: %+v", r)
	}
	if r := update(t, s, 8, command(t, Command{RetireGroup: &RetireGroup{Group: 3}})); !r.OK {
		t.Fatalf("retire group 3 again: %+v", r)
	}
	st = s.Snapshot()
	if _, ok := st.Groups[3]; ok || !st.IsRetired(3) {
		t.Fatalf("group 3 after retirement: in groups %v, retired %v", ok, st.Retired)
	}
	if r := update(t, s, 9, command(t, Command{CreateGroup: &CreateGroup{Peers: []slotstore.NodeID{5, 4, 3}}})); !r.OK {
		t.Fatalf("create: %+v", r)
	}
	if st := s.Snapshot(); st.Groups[4] == nil || st.Groups[3] != nil {
		t.Fatalf("the next group is not 4: %v", st.GroupIDs())
	}
	if r := update(t, s, 10, command(t, Command{RetireGroup: &RetireGroup{Group: 7}})); r.OK || r.Code != slotstore.CodeNotFound {
		t.Fatalf("retire a group that never was: %+v", r)
	}
}

// TestSplitWalksItsSlots: a split steps through start and each slot's
// migration phases in turn (the slot checked by every step), switching each
// slot's route, and ends with nothing left to move; a step naming another
// slot is refused and changes nothing.
func TestSplitWalksItsSlots(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	update(t, s, 1, bootstrapCmd(t, 3, 1, 3))
	idx := uint64(2)
	do := func(c Command) Result {
		idx++
		return update(t, s, idx, command(t, c))
	}
	if r := do(Command{CreateSplit: &CreateSplit{Group: 1, HashSlots: []slotstore.HashSlot{}}}); !r.OK {
		t.Fatalf("default split: %+v", r)
	}
	st := s.Snapshot()
	var def *Task
	for _, tk := range st.Tasks {
		def = tk
	}
	if def.Kind != TaskGroupSplit || len(def.HashSlots) != 128 || *def.HashSlot != 128 || def.ToGroup != 2 {
		t.Fatalf("the default split moves the upper half: %+v", def)
	}
	if r := do(Command{CancelTask: &CancelTask{ID: def.ID}}); !r.OK {
		t.Fatal(r)
	}
	if r := do(Command{RetireGroup: &RetireGroup{Group: 2}}); !r.OK {
		t.Fatalf("a cancelled split that moved nothing retires its group: %+v", r)
	}
	do(Command{AdvanceTask: &AdvanceTask{ID: def.ID, ExpectedPhase: PhaseStart, Status: TaskCancelled}})

	r := do(Command{CreateSplit: &CreateSplit{Group: 1, HashSlots: []slotstore.HashSlot{9, 7}}})
	if !r.OK {
		t.Fatal(r)
	}
	id := r.TaskID
	step := func(from, to slotstore.TaskPhase, hs *slotstore.HashSlot) Result {
		return do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: from, Phase: to, HashSlot: hs}})
	}
	seven, nine := slotstore.HashSlot(7), slotstore.HashSlot(9)
	if r := step(PhaseStart, PhaseTrack, &seven); !r.OK {
		t.Fatal(r)
	}
	for _, hs := range []*slotstore.HashSlot{&seven, &nine} {
		other := &nine
		if hs == &nine {
			other = &seven
		}
		if r := step(PhaseTrack, PhaseCopy, other); r.OK {
			t.Fatalf("a step for hash slot %d while %d moves was accepted", *other, *hs)
		}
		for _, p := range [][2]slotstore.TaskPhase{{PhaseTrack, PhaseCopy}, {PhaseCopy, PhaseCatchUp}, {PhaseCatchUp, PhaseFence}, {PhaseFence, PhaseDrain},
			{PhaseDrain, PhaseAcquire}, {PhaseAcquire, PhaseRelease}, {PhaseRelease, PhaseSwitch}} {
			if r := step(p[0], p[1], hs); !r.OK {
				t.Fatalf("slot %d %s→%s: %+v", *hs, p[0], p[1], r)
			}
		}
		next := PhaseTrack
		if hs == &nine {
			next = PhaseDone
		}
		if r := step(PhaseSwitch, next, hs); !r.OK {
			t.Fatalf("slot %d switch→%s: %+v", *hs, next, r)
		}
	}
	st = s.Snapshot()
	tk := st.Tasks[id]
	if tk.Status != TaskSucceeded || tk.Moved != 2 || len(tk.HashSlots) != 0 || tk.HashSlot != nil || tk.Phase != PhaseDone {
		t.Fatalf("split at its end: %+v", tk)
	}
	if st.HashToGroup[7] != tk.ToGroup || st.HashToGroup[9] != tk.ToGroup || st.HashToGroup[8] != 1 {
		t.Fatalf("routes after the split: 7→%d 8→%d 9→%d", st.HashToGroup[7], st.HashToGroup[8], st.HashToGroup[9])
	}
}

// TestCopyPositionIsProgress: the copy phase's position (CopiedTo) is kept
// on the task; moving it restarts the phase's clock (a long copy is not
// stuck) while a catch-up's cursor does not; a phase change clears it, and
// so does resuming a failed move (its copied rows were dropped).
func TestCopyPositionIsProgress(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	update(t, s, 1, bootstrapCmd(t, 3, 2, 3))
	do := stepper(t, s)
	hs := slotstore.HashSlot(3)
	r := do(Command{SlotMigrate: &CreateSlotMigration{HashSlot: hs, ToGroup: 2}})
	if !r.OK {
		t.Fatal(r)
	}
	id := r.TaskID
	task := func() *Task { return s.Snapshot().Tasks[id] }
	if r := do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseTrack, Phase: PhaseCopy, HashSlot: &hs}}); !r.OK {
		t.Fatal(r)
	}
	began := task().UpdatedAtMs
	if r := do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseCopy, HashSlot: &hs, CopiedTo: []byte("k1")}}); !r.OK {
		t.Fatal(r)
	}
	if tk := task(); string(tk.CopiedTo) != "k1" || tk.UpdatedAtMs == began || tk.Phase != PhaseCopy {
		t.Fatalf("rows copied further: %+v", tk)
	}
	moved := task().UpdatedAtMs
	do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseCopy, HashSlot: &hs, CopiedTo: []byte("k1")}})
	if tk := task(); tk.UpdatedAtMs != moved {
		t.Fatalf("the same position again restarted the clock: %+v", tk)
	}
	do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseCopy, HashSlot: &hs, Status: TaskFailed, Error: "aborted"}})
	if tk := task(); tk.CopiedTo != nil || tk.Status != TaskFailed {
		t.Fatalf("a failed move kept its copy position: %+v", tk)
	}
	if r := do(Command{SlotMigrate: &CreateSlotMigration{HashSlot: hs, ToGroup: 2}}); !r.OK || r.TaskID != id {
		t.Fatalf("resume: %+v", r)
	}
	if r := do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseTrack, Phase: PhaseCopy, HashSlot: &hs}}); !r.OK {
		t.Fatal(r)
	}
	do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseCopy, HashSlot: &hs, CopiedTo: []byte("k9")}})
	if r := do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseCopy, Phase: PhaseCatchUp, HashSlot: &hs}}); !r.OK {
		t.Fatal(r)
	}
	if tk := task(); tk.CopiedTo != nil || tk.Phase != PhaseCatchUp {
		t.Fatalf("after the copy: %+v", tk)
	}
}

// TestSnapshotBytesAreProgress: in a replica move's catch-up, snapshot
// bytes the learner received since the last record restart the phase's
// clock; the same count again does not; the next phase clears it.
func TestSnapshotBytesAreProgress(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	update(t, s, 1, bootstrapCmd(t, 4, 1, 3))
	do := stepper(t, s)
	g := s.Snapshot().Groups[1]
	var from, to slotstore.NodeID
	for id := range s.Snapshot().Nodes {
		if _, ok := g.Peers[id]; ok {
			from = id
		} else {
			to = id
		}
	}
	r := do(Command{CreateMove: &CreateMove{Group: 1, From: from, To: to}})
	if !r.OK {
		t.Fatal(r)
	}
	id := r.TaskID
	task := func() *Task { return s.Snapshot().Tasks[id] }
	if r := do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseAddLearner, Phase: PhaseCatchUp}}); !r.OK {
		t.Fatal(r)
	}
	began := task().UpdatedAtMs
	if r := do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseCatchUp, SnapshotBytes: 1 << 20, Error: "receiving"}}); !r.OK {
		t.Fatal(r)
	}
	if tk := task(); tk.SnapshotBytes != 1<<20 || tk.UpdatedAtMs == began || tk.Phase != PhaseCatchUp || tk.Error != "receiving" {
		t.Fatalf("snapshot bytes received: %+v", tk)
	}
	moved := task().UpdatedAtMs
	do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseCatchUp, SnapshotBytes: 1 << 20}})
	if tk := task(); tk.UpdatedAtMs != moved {
		t.Fatalf("the same count again restarted the clock: %+v", tk)
	}
	if r := do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseCatchUp, Phase: PhasePromote}}); !r.OK {
		t.Fatal(r)
	}
	if tk := task(); tk.SnapshotBytes != 0 || tk.Phase != PhasePromote {
		t.Fatalf("the next phase kept the snapshot count: %+v", tk)
	}
}

// stepper applies commands to s after its bootstrap (index 1), each at the
// next index and a second after the one before.
func stepper(t *testing.T, s *StateMachine) func(Command) Result {
	idx, at := uint64(1), int64(1000)
	return func(c Command) Result {
		idx++
		at += 1000
		c.TimeMs, c.V = at, 1
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		return update(t, s, idx, b)
	}
}

// TestARebuildInPlaceRemovesTheOldReplicaFirst: a move from a node to
// itself runs remove_old first; the node runs the old replica until the
// learner was added, then the new one (a learner until promoted); the
// commit gives the node the new replica id; it cannot be cancelled; and a
// group of one replica cannot be rebuilt in place.
func TestARebuildInPlaceRemovesTheOldReplicaFirst(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	update(t, s, 1, bootstrapCmd(t, 3, 1, 3))
	do := stepper(t, s)
	g := s.Snapshot().Groups[1]
	const node = slotstore.NodeID(2)
	old := g.Peers[node]
	finalize(t, s, do, Command{CreateMove: &CreateMove{Group: 1, From: node, To: node}})
	r := do(Command{CreateMove: &CreateMove{Group: 1, From: node, To: node}})
	if !r.OK {
		t.Fatal(r)
	}
	id := r.TaskID
	tk := s.Snapshot().Tasks[id]
	if tk.Phase != PhaseRemoveOld || tk.NewReplicaID == old {
		t.Fatalf("the rebuild's start: %+v", tk)
	}
	wants := func() (bool, uint64, bool) { return s.Snapshot().Wants(node, 1) }
	if w, rid, learner := wants(); !w || rid != old || learner {
		t.Fatalf("before its learner: wants %v replica %d learner %v", w, rid, learner)
	}
	if r := do(Command{CancelTask: &CancelTask{ID: id}}); r.OK {
		t.Fatal("a rebuild in place was cancelled")
	}
	for _, step := range []struct {
		from, to slotstore.TaskPhase
		replica  uint64
		learner  bool
	}{
		{PhaseRemoveOld, PhaseAddLearner, old, false},
		{PhaseAddLearner, PhaseCatchUp, tk.NewReplicaID, true},
		{PhaseCatchUp, PhasePromote, tk.NewReplicaID, true},
		{PhasePromote, PhaseCommit, tk.NewReplicaID, false},
	} {
		if r := do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: step.from, Phase: step.to}}); !r.OK {
			t.Fatalf("%s → %s: %v", step.from, step.to, r)
		}
		if w, rid, learner := wants(); !w || rid != step.replica || learner != step.learner {
			t.Fatalf("in %s: wants %v replica %d learner %v, want %d %v", step.to, w, rid, learner, step.replica, step.learner)
		}
	}
	if r := do(Command{AdvanceTask: &AdvanceTask{ID: id, ExpectedPhase: PhaseCommit, Phase: PhaseDone}}); !r.OK {
		t.Fatal(r)
	}
	after := s.Snapshot()
	if after.Tasks[id].Status != TaskSucceeded || after.Groups[1].Peers[node] != tk.NewReplicaID || len(after.Groups[1].Peers) != 3 ||
		after.Groups[1].ConfigEpoch != g.ConfigEpoch+1 {
		t.Fatalf("after the commit: %+v, peers %v", after.Tasks[id], after.Groups[1].Peers)
	}

	one := NewStateMachine(func(*State) {})
	update(t, one, 1, bootstrapCmd(t, 1, 1, 1))
	doOne := stepper(t, one)
	if r := doOne(Command{SetClusterVersion: &SetClusterVersion{Version: clusterversion.StateChecks.Since}}); !r.OK {
		t.Fatal(r)
	}
	if r := doOne(Command{CreateMove: &CreateMove{Group: 1, From: 1, To: 1}}); r.OK || r.Code != slotstore.CodeFailedPrecondition {
		t.Fatalf("a one-replica group rebuilt in place: %+v", r)
	}
}

// finalize checks that cmd, of a feature of cluster version 0.2, is
// refused while the cluster is at 0.1 (changing nothing), then records
// 0.2.
func finalize(t *testing.T, s *StateMachine, do func(Command) Result, cmd Command) {
	t.Helper()
	state := func() string {
		st := s.Snapshot().Clone()
		st.AppliedIndex = 0
		b, _ := json.Marshal(st)
		return string(b)
	}
	before := state()
	if r := do(cmd); r.OK || r.Code != slotstore.CodeFailedPrecondition || !strings.Contains(r.Message, "need cluster version 0.2") {
		t.Fatalf("%+v at cluster version 0.1: %+v", cmd, r)
	}
	if state() != before {
		t.Fatalf("%+v, refused, changed the state", cmd)
	}
	if r := do(Command{SetClusterVersion: &SetClusterVersion{Version: clusterversion.StateChecks.Since}}); !r.OK {
		t.Fatal(r)
	}
}

// TestTheClusterVersionOnlyRises: SetClusterVersion records a newer
// version, never the same, an older or none; the state's snapshot keeps it.
func TestTheClusterVersionOnlyRises(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	update(t, s, 1, bootstrapCmd(t, 3, 1, 3))
	do := stepper(t, s)
	if v := s.Snapshot().Version(); v != clusterversion.Base {
		t.Fatalf("a new cluster is at %s", v)
	}
	set := func(v slotstore.Version) Result {
		return do(Command{SetClusterVersion: &SetClusterVersion{Version: v}})
	}
	if r := set(slotstore.Version{Major: 0, Minor: 2}); !r.OK {
		t.Fatal(r)
	}
	for _, v := range []slotstore.Version{{Major: 0, Minor: 2}, {Major: 0, Minor: 1}, {}} {
		if r := set(v); r.OK {
			t.Fatalf("%s recorded over 0.2", v)
		}
	}
	b, err := json.Marshal(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil || back.Version() != (slotstore.Version{Major: 0, Minor: 2}) {
		t.Fatalf("through JSON: %v %v", back.Version(), err)
	}
}

// TestAReadFenceIsSetAndLifted: FenceReads records why a group's reads are
// refused (ReadsFenced), a clone keeps it apart, LiftReadFence ends it; an
// unknown group is refused.
func TestAReadFenceIsSetAndLifted(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	update(t, s, 1, bootstrapCmd(t, 3, 1, 3))
	do := stepper(t, s)
	if s.Snapshot().ReadsFenced(1) != nil {
		t.Fatal("a new group's reads are fenced")
	}
	finalize(t, s, do, Command{FenceReads: &FenceReads{Group: 1, CheckID: 6, Reason: "no majority"}})
	if r := do(Command{FenceReads: &FenceReads{Group: 1, CheckID: 7, Reason: "no majority"}}); !r.OK {
		t.Fatal(r)
	}
	before := s.Snapshot()
	if f := before.ReadsFenced(1); f == nil || f.CheckID != 7 || f.Reason != "no majority" || f.AtMs == 0 {
		t.Fatalf("the fence: %+v", f)
	}
	if r := do(Command{LiftReadFence: &LiftReadFence{Group: 1, CheckID: 8}}); !r.OK {
		t.Fatal(r)
	}
	if s.Snapshot().ReadsFenced(1) != nil || before.ReadsFenced(1) == nil {
		t.Fatal("the lift did not end the fence, or changed an earlier snapshot")
	}
	if r := do(Command{FenceReads: &FenceReads{Group: 9}}); r.OK || r.Code != slotstore.CodeNotFound {
		t.Fatalf("a fence of no group: %+v", r)
	}
}
