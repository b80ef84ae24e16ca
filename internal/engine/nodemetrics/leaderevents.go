package nodemetrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
)

// leaderEvents counts what dragonboat's leader events tell a node about its
// replicas: the leaders they saw take office (slotmeta_leader_changes_total)
// and the elections they saw held (slotmeta_elections_total), by group
// ("controller" for the controller group's).
//
// An election is counted from the term. dragonboat publishes a replica's
// (leader, term) whenever either changes, and no event for a campaign (its
// campaign counter lives in its own metrics registry, which the node does
// not enable). With pre-vote on (cluster's node.go), a term is only entered by a
// candidate that won its pre-vote — an election, a leader transfer's
// included — so the terms a replica moved through are the elections held
// while it watched, each counted once per replica whether or not it took
// part or anyone won. A replica's first event (its start: the term of its
// log) only sets the base — per replica id: a group's replica that leaves
// the node and comes back is a new replica, whose first term is no count of
// the elections held while the node had none. A node holds one replica of
// a shard at a time, so one entry a shard says which replica it counts
// (at most one a group the node ever held).
//
// Concurrency contract: observe runs on dragonboat's event goroutine; the
// mutex keeps it safe from any other.
type leaderEvents struct {
	changes, elections *prometheus.CounterVec

	mu    sync.Mutex
	terms map[uint64]replicaTerm // by shard: its replica here, the last term it saw
}

type replicaTerm struct{ replica, term uint64 }

func newLeaderEvents() *leaderEvents {
	return &leaderEvents{
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slotmeta_leader_changes_total",
			Help: `Leaders this node's replica of a group saw elected or handed over (group "controller": the controller group's).`}, []string{"group"}),
		elections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slotmeta_elections_total",
			Help: `Elections this node's replica of a group saw held — the Raft terms it went through (pre-vote on: a term is entered only by a candidate that won its pre-vote; a leader transfer is one) — won or not (group "controller": the controller group's).`}, []string{"group"}),
		terms: map[uint64]replicaTerm{},
	}
}

func (e *leaderEvents) collectors() []prometheus.Collector {
	return []prometheus.Collector{e.changes, e.elections}
}

// observe counts one leader event of replica of shard: the leader it now
// knows (0: none) at term.
func (e *leaderEvents) observe(shard, replica, leader, term uint64) {
	group, ok := groupLabel(shard)
	if !ok {
		return
	}
	e.mu.Lock()
	was, ok := e.terms[shard]
	seen := ok && was.replica == replica
	last := was.term
	if !seen || term > last {
		e.terms[shard] = replicaTerm{replica, term}
	}
	e.mu.Unlock()
	if seen && term > last {
		e.elections.WithLabelValues(group).Add(float64(term - last))
	}
	if leader != 0 {
		e.changes.WithLabelValues(group).Inc()
	}
}

// groupLabel is the group label of a shard: its group's id, or "controller".
func groupLabel(shard uint64) (string, bool) {
	if shard == controller.ShardID {
		return "controller", true
	}
	g, ok := controller.GroupOfShard(shard)
	if !ok {
		return "", false
	}
	return strconv.FormatUint(uint64(g), 10), true
}
