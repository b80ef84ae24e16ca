package controller

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestRaftTiming: a registered node's timing is recorded, replaced by a
// later report, kept by snapshots and clones; an unknown node's or an empty
// timing is refused.
func TestRaftTiming(t *testing.T) {
	s := NewStateMachine(nil)
	update(t, s, 1, bootstrapCmd(t, 3, 2, 3))
	want := TimingOf(50*time.Millisecond, 10)
	if r := update(t, s, 2, encode(t, Command{RaftTiming: &SetRaftTiming{Node: 2, Timing: want}})); !r.OK {
		t.Fatalf("refused: %+v", r)
	}
	shorter := TimingOf(20*time.Millisecond, 5)
	update(t, s, 3, encode(t, Command{RaftTiming: &SetRaftTiming{Node: 3, Timing: want}}))
	update(t, s, 4, encode(t, Command{RaftTiming: &SetRaftTiming{Node: 3, Timing: shorter}}))
	if r := update(t, s, 5, encode(t, Command{RaftTiming: &SetRaftTiming{Node: 9, Timing: want}})); r.OK || r.Code != slotstore.CodeNotFound {
		t.Fatalf("an unknown node's timing: %+v", r)
	}
	if r := update(t, s, 6, encode(t, Command{RaftTiming: &SetRaftTiming{Node: 1}})); r.OK || r.Code != slotstore.CodeInvalidArgument {
		t.Fatalf("an empty timing: %+v", r)
	}
	st := s.Snapshot()
	if got := st.Timing; !reflect.DeepEqual(got, map[slotstore.NodeID]RaftTiming{2: want, 3: shorter}) {
		t.Fatalf("timing %v", got)
	}
	c := st.Clone()
	c.Timing[2] = shorter
	if s.Snapshot().Timing[2] != want {
		t.Fatal("a clone shares the timing map")
	}
	var buf bytes.Buffer
	if err := s.SaveSnapshot(&buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	r := NewStateMachine(nil)
	if err := r.RecoverFromSnapshot(bytes.NewReader(buf.Bytes()), nil, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Snapshot().Timing, st.Timing) {
		t.Fatal("the timing did not survive a snapshot")
	}
	if got := TimingOf(1500*time.Microsecond, 10).RTT(); got != time.Millisecond {
		t.Fatalf("a 1.5 ms tick is recorded as %v, want it rounded down (a shorter lease)", got)
	}
}
