package controller

import (
	"testing"

	"slotmeta/internal/slotstore"
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
