package raftlog

import (
	"testing"

	"github.com/lni/dragonboat/v4/client"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// TestAppendedRecordsWhatTheStateMachineWillSee: the record of a replica
// starts at its first saved entry and follows the highest update entry
// saved — not a new term's no-op, not a configuration change, not a
// session's registration — and never goes down, not even when a save
// replaces entries at lower indexes (a follower's log overwritten by a new
// leader).
func TestAppendedRecordsWhatTheStateMachineWillSee(t *testing.T) {
	l := newCommitLogDB(newFakeLogDB())
	f := &Factory{}
	f.db.Store(l)
	a := f.Appended(1, 1)
	if first, top := a.Load(); first != 0 || top != 0 {
		t.Fatalf("before any save: %d, %d", first, top)
	}
	// Our proposals use dragonboat's no-op session: a client id, series 0.
	update := func(i uint64) pb.Entry {
		return pb.Entry{Index: i, Term: 2, ClientID: 7, SeriesID: client.NoOPSeriesID, Cmd: []byte("x")}
	}
	noop := func(i uint64) pb.Entry { return pb.Entry{Index: i, Term: 2} }
	conf := func(i uint64) pb.Entry {
		return pb.Entry{Index: i, Term: 2, Type: pb.ConfigChangeEntry, Cmd: []byte("c")}
	}
	session := func(i uint64) pb.Entry {
		return pb.Entry{Index: i, Term: 2, ClientID: 7, SeriesID: client.SeriesIDForRegister}
	}
	save := func(ents ...pb.Entry) {
		t.Helper()
		if err := l.SaveRaftState([]pb.Update{{ShardID: 1, ReplicaID: 1, EntriesToSave: ents}}, 1); err != nil {
			t.Fatal(err)
		}
	}
	save(noop(11))
	if first, top := a.Load(); first != 11 || top != 0 {
		t.Fatalf("after a no-op at 11: first %d, highest update %d; want 11, 0", first, top)
	}
	save(update(12), update(13), conf(14))
	if first, top := a.Load(); first != 11 || top != 13 {
		t.Fatalf("after updates 12–13 and a config change at 14: %d, %d; want 11, 13", first, top)
	}
	save(session(15), noop(16))
	if _, top := a.Load(); top != 13 {
		t.Fatalf("a session request and a no-op moved the highest update to %d", top)
	}
	save(update(12)) // 12 replaced: the record stays where it was
	if first, top := a.Load(); first != 11 || top != 13 {
		t.Fatalf("after 12 was replaced: %d, %d; want 11, 13", first, top)
	}
	// A replica of one voter commits what it appends before saving it and
	// sends it to its non-voting replicas first: what it sends counts
	// (first stays what the log saved), and other messages do not.
	f.Sending(pb.MessageBatch{Requests: []pb.Message{
		{Type: pb.Replicate, ShardID: 1, From: 1, To: 3, Entries: []pb.Entry{update(17), noop(18)}},
		{Type: pb.Heartbeat, ShardID: 1, From: 1, To: 3},
		{Type: pb.Replicate, ShardID: 2, From: 1, To: 3, Entries: []pb.Entry{update(90)}},
	}})
	if first, top := a.Load(); first != 11 || top != 17 {
		t.Fatalf("after sending update 17: %d, %d; want 11, 17", first, top)
	}
	if first, top := f.Appended(2, 1).Load(); first != 0 || top != 90 {
		t.Fatalf("shard 2 after sending 90: %d, %d; want 0, 90", first, top)
	}
	save(update(16)) // saved after a higher one was sent: stays at 17
	if _, top := a.Load(); top != 17 {
		t.Fatalf("highest update %d after a lower save, want 17", top)
	}
	if first, _ := f.Appended(1, 2).Load(); first != 0 {
		t.Fatal("another replica shares the record")
	}
	if f.Appended(1, 1) != a {
		t.Fatal("the record of a replica was replaced")
	}
	if (&Factory{}).Appended(1, 1) != nil {
		t.Fatal("a factory that created no log returned a record")
	}
	(&Factory{}).Sending(pb.MessageBatch{Requests: []pb.Message{{Type: pb.Replicate, Entries: []pb.Entry{update(1)}}}}) // no log: nothing to record, no panic
}
