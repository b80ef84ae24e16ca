package cluster

import (
	"errors"
	"testing"

	"github.com/lni/dragonboat/v4/client"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// TestUnappliedUpdates: a transfer waits for the update entries its leader
// has not applied, not for a new term's no-op or a configuration change at
// the log's tail, which the state machine never sees (every transfer of a
// group without a write since its election waited out the drain bound).
func TestUnappliedUpdates(t *testing.T) {
	update := func(i uint64) pb.Entry {
		return pb.Entry{Index: i, ClientID: 7, SeriesID: client.NoOPSeriesID, Cmd: []byte{1}}
	}
	noop := func(i uint64) pb.Entry { return pb.Entry{Index: i} }
	conf := func(i uint64) pb.Entry { return pb.Entry{Index: i, Type: pb.ConfigChangeEntry, Cmd: []byte{1}} }
	log := map[uint64]pb.Entry{1: update(1), 2: noop(2), 3: conf(3), 4: update(4), 5: noop(5)}
	entries := func(lo, hi, _ uint64) ([]pb.Entry, error) {
		var out []pb.Entry
		for i := lo; i < hi; i++ {
			e, ok := log[i]
			if !ok {
				return nil, errors.New("compacted")
			}
			out = append(out, e)
		}
		return out, nil
	}
	for _, c := range []struct {
		applied, last uint64
		want          bool
	}{
		{5, 5, false},  // all applied
		{4, 5, false},  // a no-op after the last update
		{1, 3, false},  // a no-op and a configuration change
		{3, 5, true},   // update 4 not applied
		{0, 5, true},   // nothing applied
		{6, 5, false},  // applied past the log (a snapshot)
		{0, 100, true}, // too long a tail to read: wait
	} {
		if got := unappliedUpdates(c.applied, c.last, entries); got != c.want {
			t.Errorf("applied %d, last %d: %v, want %v", c.applied, c.last, got, c.want)
		}
	}
	log = map[uint64]pb.Entry{5: noop(5)} // 4 compacted away: cannot tell
	if !unappliedUpdates(3, 5, entries) {
		t.Error("an unreadable tail counts as pending")
	}
}
