package nodemetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
)

// TestLeaderEventsCountElectionsByTerm: a replica's first event sets the
// base; each term it moves through after is an election, won or not; a
// leader known (again) is a leader change, a term seen twice counts once,
// and an older term (a stale event) counts nothing.
func TestLeaderEventsCountElectionsByTerm(t *testing.T) {
	shard := controller.ShardOf(7)
	for _, tc := range []struct {
		name               string
		events             [][2]uint64 // leader, term
		elections, changes float64
	}{
		{"a start with a leader already known", [][2]uint64{{2, 5}}, 0, 1},
		{"a new group's first election", [][2]uint64{{0, 0}, {0, 1}, {1, 1}}, 1, 1},
		{"a restart: the log's term, then a new leader", [][2]uint64{{0, 4}, {0, 5}, {3, 5}}, 1, 1},
		{"a lost election, then a won one", [][2]uint64{{1, 2}, {0, 3}, {0, 4}, {2, 4}}, 2, 2},
		{"a term learned late: the elections missed count", [][2]uint64{{1, 2}, {3, 6}}, 4, 2},
		{"a leader transfer", [][2]uint64{{1, 2}, {2, 3}}, 1, 2},
		{"the same term again, and a stale one", [][2]uint64{{1, 2}, {0, 2}, {1, 2}, {0, 1}}, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLeaderEvents()
			for _, ev := range tc.events {
				e.observe(shard, 3, ev[0], ev[1])
			}
			if got := counted(t, e.elections, "7"); got != tc.elections {
				t.Errorf("elections %v, want %v", got, tc.elections)
			}
			if got := counted(t, e.changes, "7"); got != tc.changes {
				t.Errorf("leader changes %v, want %v", got, tc.changes)
			}
		})
	}
	e := newLeaderEvents()
	e.observe(controller.ShardID, 1, 1, 1)
	e.observe(controller.ShardID, 1, 2, 2)
	if got := counted(t, e.elections, "controller"); got != 1 {
		t.Fatalf("controller elections %v, want 1", got)
	}
	// A replica of group 7 that left the node and came back (a new replica
	// id) at a later term: its first event is a base, not 9 elections.
	e.observe(shard, 3, 1, 2)
	e.observe(shard, 8, 2, 11)
	if got := counted(t, e.elections, "7"); got != 0 {
		t.Fatalf("a returning replica counted %v elections, want 0", got)
	}
}

// counted is the value of vec's counter for group.
func counted(t *testing.T, vec *prometheus.CounterVec, group string) float64 {
	t.Helper()
	var m dto.Metric
	if err := vec.WithLabelValues(group).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
