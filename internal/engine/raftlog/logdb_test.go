package raftlog

import (
	"testing"

	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// fakeLogDB records the saves that reach dragonboat's LogDB and keeps the
// last written state per replica, as the real one does.
type fakeLogDB struct {
	raftio.ILogDB
	saves [][]pb.Update
	state map[replicaKey]pb.State
}

func newFakeLogDB() *fakeLogDB { return &fakeLogDB{state: map[replicaKey]pb.State{}} }

func (f *fakeLogDB) SaveRaftState(updates []pb.Update, _ uint64) error {
	f.saves = append(f.saves, append([]pb.Update(nil), updates...))
	for _, ud := range updates {
		if !pb.IsEmptyState(ud.State) {
			f.state[replicaKey{ud.ShardID, ud.ReplicaID}] = ud.State
		}
	}
	return nil
}

func (f *fakeLogDB) ReadRaftState(shard, replica, _ uint64) (raftio.RaftState, error) {
	return raftio.RaftState{State: f.state[replicaKey{shard, replica}]}, nil
}

func (f *fakeLogDB) RemoveNodeData(shard, replica uint64) error {
	delete(f.state, replicaKey{shard, replica})
	return nil
}

func st(term, vote, commit uint64) pb.State { return pb.State{Term: term, Vote: vote, Commit: commit} }

func ents(idx ...uint64) []pb.Entry {
	var out []pb.Entry
	for _, i := range idx {
		out = append(out, pb.Entry{Index: i, Term: 2})
	}
	return out
}

func TestCommitLogDBDefersCommitOnlySaves(t *testing.T) {
	inner := newFakeLogDB()
	l := newCommitLogDB(inner)
	save := func(ud ...pb.Update) {
		t.Helper()
		if err := l.SaveRaftState(ud, 1); err != nil {
			t.Fatal(err)
		}
	}

	// The first state of a replica is written whatever it is: nothing is
	// known about what is on disk.
	save(pb.Update{ShardID: 1, ReplicaID: 1, State: st(2, 1, 4)})
	// Entries are written; the commit index alone is not.
	save(pb.Update{ShardID: 1, ReplicaID: 1, EntriesToSave: ents(5)})
	save(pb.Update{ShardID: 1, ReplicaID: 1, State: st(2, 1, 5)})
	// An update with nothing to write (messages only) writes nothing and
	// does not flush the deferred commit.
	save(pb.Update{ShardID: 1, ReplicaID: 1})
	if len(inner.saves) != 2 || l.skippedSaves() != 2 {
		t.Fatalf("%d saves reached the log, %d skipped; want 2 and 2 (a commit-only and an empty update)", len(inner.saves), l.skippedSaves())
	}
	if got := inner.state[replicaKey{1, 1}]; got.Commit != 4 {
		t.Fatalf("written commit %d, want 4 (5 is deferred)", got.Commit)
	}
	// The next save with entries carries the deferred commit.
	save(pb.Update{ShardID: 1, ReplicaID: 1, EntriesToSave: ents(6)})
	if got := inner.state[replicaKey{1, 1}]; got != st(2, 1, 5) {
		t.Fatalf("written state %+v, want the deferred commit 5", got)
	}
	// A save of its own state wins over a deferred one.
	save(pb.Update{ShardID: 1, ReplicaID: 1, State: st(2, 1, 6)})
	save(pb.Update{ShardID: 1, ReplicaID: 1, EntriesToSave: ents(7), State: st(2, 1, 6)})
	if got := inner.state[replicaKey{1, 1}]; got != st(2, 1, 6) {
		t.Fatalf("written state %+v, want commit 6", got)
	}
	// A new term or vote is always written at once.
	n := len(inner.saves)
	save(pb.Update{ShardID: 1, ReplicaID: 1, State: st(3, 0, 6)})
	save(pb.Update{ShardID: 1, ReplicaID: 1, State: st(3, 2, 6)})
	if len(inner.saves) != n+2 || inner.state[replicaKey{1, 1}] != st(3, 2, 6) {
		t.Fatalf("term and vote changes: %d saves, state %+v; want 2 saves, {3 2 6}", len(inner.saves)-n, inner.state[replicaKey{1, 1}])
	}
	// So is a snapshot.
	n = len(inner.saves)
	save(pb.Update{ShardID: 1, ReplicaID: 1, State: st(3, 2, 9), Snapshot: pb.Snapshot{Index: 9, Term: 3}})
	if len(inner.saves) != n+1 {
		t.Fatal("a snapshot save was deferred")
	}
	// Replicas are independent, and one call keeps the others' updates.
	save(pb.Update{ShardID: 2, ReplicaID: 1, State: st(1, 1, 1)})
	n = len(inner.saves)
	save(pb.Update{ShardID: 1, ReplicaID: 1, State: st(3, 2, 10)},
		pb.Update{ShardID: 2, ReplicaID: 1, EntriesToSave: ents(2), State: st(1, 1, 1)})
	if len(inner.saves) != n+1 || len(inner.saves[n]) != 1 || inner.saves[n][0].ShardID != 2 {
		t.Fatalf("mixed call wrote %v, want only shard 2's update", inner.saves[n:])
	}
}

func TestCommitLogDBReadRaftState(t *testing.T) {
	inner := newFakeLogDB()
	l := newCommitLogDB(inner)
	_ = l.SaveRaftState([]pb.Update{{ShardID: 1, ReplicaID: 1, State: st(2, 1, 4), EntriesToSave: ents(4, 5, 6)}}, 1)
	_ = l.SaveRaftState([]pb.Update{{ShardID: 1, ReplicaID: 1, State: st(2, 1, 6)}}, 1)

	// A replica restarted in this process sees the deferred commit.
	rs, err := l.ReadRaftState(1, 1, 0)
	if err != nil || rs.State != st(2, 1, 6) {
		t.Fatalf("ReadRaftState = %+v, %v; want commit 6", rs.State, err)
	}
	// After a crash the deferred commit is gone; a snapshot past the
	// written commit raises it (the snapshot's entries were committed).
	after := newCommitLogDB(inner)
	if rs, _ := after.ReadRaftState(1, 1, 0); rs.State.Commit != 4 {
		t.Fatalf("after a crash, no snapshot: commit %d, want the written 4", rs.State.Commit)
	}
	if rs, _ := after.ReadRaftState(1, 1, 6); rs.State != st(2, 1, 6) {
		t.Fatalf("after a crash, snapshot at 6: state %+v, want commit 6", rs.State)
	}
	if rs, _ := after.ReadRaftState(1, 1, 3); rs.State.Commit != 4 {
		t.Fatalf("a snapshot below the written commit lowered it to %d", rs.State.Commit)
	}
	// A replica never saved has no state to raise.
	if rs, _ := after.ReadRaftState(7, 1, 9); !pb.IsEmptyState(rs.State) {
		t.Fatalf("unknown replica got state %+v", rs.State)
	}
	// Removing a replica's data forgets its deferred commit and written
	// state: its next state is written at once.
	_ = l.RemoveNodeData(1, 1)
	_ = l.SaveRaftState([]pb.Update{{ShardID: 1, ReplicaID: 1, State: st(2, 1, 7)}}, 1)
	if got := inner.state[replicaKey{1, 1}]; got != st(2, 1, 7) {
		t.Fatalf("after RemoveNodeData the first state was not written: %+v", got)
	}
}
