package chaos

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client/routed"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
)

// scheduleReport is what one schedule did and found. log writes it as a few
// one-line t.Logf calls, each starting "seed=<seed> <what>:", which `make
// chaos` keeps in chaos/results/ (it keeps every "<file>_test.go:" line) and
// totals from the "checks:" lines.
type scheduleReport struct {
	seed         int64
	quiesce      bool // the nodes ran --quiesce
	faults       []injected
	rec          *recorder
	verdicts     map[string]string // model → "ok" or the violation
	lost         lostReport
	dups         []string // values applied twice and re-sends not answered as replays
	own          ownershipReport
	moves        *moveLog
	watch        *watchReport
	watchKey     *watchReport          // the watch of one key
	states       stateChecks           // every group's replicas checked against each other at the end
	smart        routed.Stats          // the route-aware client's counters
	snaps        cluster.SnapshotStats // summed over every node the schedule ran
	dropped      uint64                // messages the fault network refused
	delayedSyncs uint64                // fsyncs the fault disks slowed
	run, check   time.Duration
}

// violations counts everything that fails the schedule.
func (s *scheduleReport) violations() int {
	n := s.lost.lost + len(s.dups) + len(s.own.violations) + len(s.rec.failures) + len(s.moves.violations) + len(s.watch.violations) + len(s.watchKey.violations) + len(s.states.violations)
	for _, v := range s.verdicts {
		if v != "ok" {
			n++
		}
	}
	return n
}

func (s *scheduleReport) log(t *testing.T) {
	kinds := map[string]int{}
	var descs []string
	for _, f := range s.faults {
		kinds[f.kind]++
		descs = append(descs, f.desc)
	}
	t.Logf("seed=%d faults: %d (%s): %s", s.seed, len(s.faults), countList(kinds), strings.Join(descs, ", "))
	t.Logf("seed=%d ops: %s", s.seed, s.rec.opsByKind())
	id := s.rec.idem
	t.Logf("seed=%d idempotency: writes=%d retried=%d resent=%d replay_mismatches=%d",
		s.seed, id.writes, id.retried, id.resent, id.mismatched)
	m := s.moves
	t.Logf("seed=%d cluster: snapshots received=%d recovered=%d sent=%d send_aborted=%d; moves started=%d resumed=%d refused=%d done=%d failed_then_done=%d ctrl_leader_restarts=%d ctrl_leader_isolations=%d restarts_after_move=%d; net_dropped=%d delayed_syncs=%d",
		s.seed, s.snaps.Received, s.snaps.Recovered, s.snaps.Sent, s.snaps.SendAborted,
		m.started, m.resumed, m.refused, m.done, m.failedOnce, m.ctrlRestarts, m.ctrlIsolates, m.restartsAfter, s.dropped, s.delayedSyncs)
	sm := m.slots
	t.Logf("seed=%d slot moves: migrations=%d splits=%d merges=%d refused=%d resumed=%d done=%d failed=%d retried=%d",
		s.seed, sm.migrations, sm.splits, sm.merges, sm.refused, sm.resumed, sm.done, sm.failed, sm.aborted)
	t.Logf("seed=%d smart: requests=%d direct=%d retries=%d refreshes=%d stream_tables=%d",
		s.seed, s.smart.Requests, s.smart.Direct, s.smart.Retries, s.smart.Refreshes, s.smart.StreamEvents)
	t.Logf("seed=%d watch: %s", s.seed, s.watch.line())
	t.Logf("seed=%d watch_key: %s", s.seed, s.watchKey.line())
	var models []string
	for m, v := range s.verdicts {
		models = append(models, m+"="+v)
	}
	sort.Strings(models)
	t.Logf("seed=%d checks: violations=%d linearizable %s; acked=%d lost=%d; duplicate_applies=%d; slot_checks=%d slot_skipped=%d slot_violations=%d; watch_violations=%d; failures=%d; snapshot_installs=%d moves_done=%d move_violations=%d; state_checks=%d state_differences=%d; quiesce=%v run=%v check=%v",
		s.seed, s.violations(), strings.Join(models, " "), s.lost.acked, s.lost.lost, len(s.dups),
		s.own.checks, s.own.skipped, len(s.own.violations), len(s.watch.violations)+len(s.watchKey.violations), len(s.rec.failures), s.snaps.Received, m.done, len(m.violations),
		s.states.groups, len(s.states.violations), s.quiesce, s.run.Round(time.Millisecond), s.check.Round(time.Millisecond))
	for _, group := range []struct {
		what  string
		lines []string
	}{{"lost", s.lost.details}, {"duplicate", s.dups}, {"slot", s.own.violations}, {"watch", s.watch.violations}, {"watch_key", s.watchKey.violations}, {"failure", s.rec.failures}, {"move", m.violations}, {"state", s.states.violations}} {
		for i, l := range group.lines {
			if i == 10 {
				t.Logf("seed=%d %s: … %d more", s.seed, group.what, len(group.lines)-i)
				break
			}
			t.Logf("seed=%d %s: %s", s.seed, group.what, l)
		}
	}
}

func countList(m map[string]int) string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
