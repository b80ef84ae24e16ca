package raftlog

import (
	"errors"
	"testing"

	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// startLogDB holds one replica's bootstrap record and latest snapshot.
type startLogDB struct {
	raftio.ILogDB
	bootstrap *pb.Bootstrap
	snapshot  pb.Snapshot
}

func (l startLogDB) GetBootstrapInfo(uint64, uint64) (pb.Bootstrap, error) {
	if l.bootstrap == nil {
		return pb.Bootstrap{}, raftio.ErrNoBootstrapInfo
	}
	return *l.bootstrap, nil
}

func (l startLogDB) GetSnapshot(uint64, uint64) (pb.Snapshot, error) { return l.snapshot, nil }

// snapshotListing is a snapshot at index 100 whose membership has the
// voters and non-voting replicas given.
func snapshotListing(voters, nonVoting []uint64) pb.Snapshot {
	m := pb.Membership{ConfigChangeId: 90, Addresses: map[uint64]string{}, NonVotings: map[uint64]string{}}
	for _, id := range voters {
		m.Addresses[id] = "a"
	}
	for _, id := range nonVoting {
		m.NonVotings[id] = "a"
	}
	return pb.Snapshot{Index: 100, Term: 3, Membership: m}
}

func TestRestartsNonVotingAsItWasWhereTheReplayBegins(t *testing.T) {
	const self = 4
	joined := &pb.Bootstrap{Join: true, Type: pb.OnDiskStateMachine}
	founded := &pb.Bootstrap{Addresses: map[uint64]string{1: "a", 2: "b", self: "d"}, Type: pb.OnDiskStateMachine}
	for _, tc := range []struct {
		name string
		db   startLogDB
		want bool
	}{
		// The crash loop of issue 51: joined as non-voting, promoted, no
		// snapshot since: the replay adds self as non-voting first.
		{"joined, no snapshot", startLogDB{bootstrap: joined}, true},
		{"joined, snapshot before the promotion", startLogDB{bootstrap: joined, snapshot: snapshotListing([]uint64{1, 2, 3}, []uint64{self})}, true},
		{"joined, snapshot after the promotion", startLogDB{bootstrap: joined, snapshot: snapshotListing([]uint64{1, 2, self}, nil)}, false},
		// Not in it (a snapshot from before its addition, which the
		// engine does not send: an on-disk state machine's is streamed
		// from its state then): the replay would add it as it joined.
		{"joined, snapshot without self", startLogDB{bootstrap: joined, snapshot: snapshotListing([]uint64{1, 2, 3}, nil)}, true},
		{"founding member, snapshot without self", startLogDB{bootstrap: founded, snapshot: snapshotListing([]uint64{1, 2, 3}, nil)}, false},
		{"founding member, no snapshot", startLogDB{bootstrap: founded}, false},
		{"founding member, snapshot", startLogDB{bootstrap: founded, snapshot: snapshotListing([]uint64{1, 2, self}, nil)}, false},
		// A restored or recovered replica's log begins at an imported
		// snapshot (its bootstrap record says join) that lists it a voter.
		{"imported start", startLogDB{bootstrap: joined, snapshot: snapshotListing([]uint64{self}, nil)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := restartsNonVoting(tc.db, 7, self)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("non-voting %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := restartsNonVoting(startLogDB{}, 7, self); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("a replica without a bootstrap record: %v, want ErrNotStarted", err)
	}
}
