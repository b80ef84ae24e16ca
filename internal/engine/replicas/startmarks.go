package replicas

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Start marks: the crash-loop breaker (issue 51). The engine checks a
// restarted replica's log as it replays it, and some of what it refuses
// it refuses with a panic on one of its own worker goroutines — a replayed
// entry it cannot apply — which no caller can recover: the process ends,
// and a supervisor starting it again starts the same replay. So before a
// replica replays its own log the set writes a mark for it in the data
// directory, and removes it once the replica has applied what it held (its
// saved commit index; our state machine does not see the entries the
// engine applies itself, a membership change at the log's end, so also
// after replayGrace without an end), or when the process closes cleanly. A mark found at
// start names a replica that was replaying when the previous process ended
// without closing:
//
//   - such a suspect is started alone, once no other replica of this
//     process is still replaying, so that a second end is its alone;
//   - a suspect whose previous replay was alone and that has now been
//     replaying as two processes ended is not started: it is reported
//     failed (failures.go) with the last crash's first line, and the node
//     starts without it. Moving it off the node removes its data and its
//     mark.
//
// A mark is small JSON in <dir>/<shard>-<replica>, written before the
// engine starts the replica. A node killed twice while one
// replica replays alone (kill -9 by an operator, not a crash) has that
// replica reported failed too: moving it off and back rebuilds it.

// crashesToGiveUp is how many processes may end while a replica replays
// (the last one alone) before it is not started again.
const crashesToGiveUp = 2

// replayGrace is how long a replica replays at most, as far as the marks
// go: the engine applies what a restarted replica holds within
// milliseconds of its start.
const replayGrace = 10 * time.Second

// mark is what a start mark's file holds: the ends of processes seen
// while this replica replayed before this attempt, and whether this
// attempt runs alone.
type mark struct {
	Crashes int  `json:"crashes"`
	Alone   bool `json:"alone"`
}

type markKey struct{ shard, replica uint64 }

// ReplayCrashes is the failure of a replica not started again because
// processes ended while it replayed its log.
type ReplayCrashes struct {
	Crashes   int
	LastCrash string // the first line of the last crash's output ("" if none was kept)
}

func (e *ReplayCrashes) Error() string {
	why := "no crash output was kept"
	if e.LastCrash != "" {
		why = "the last crash: " + e.LastCrash
	}
	return fmt.Sprintf("the process ended %d times while this replica replayed its log, the last time alone; not started again (%s)", e.Crashes, oneLine(why))
}

// errWaitAlone says a suspect waits until no other replica replays.
var errWaitAlone = errors.New("replicas: a replica that was replaying when the last process ended starts alone")

// startMarks keeps the marks of one data directory.
type startMarks struct {
	dir       string
	lastCrash string
	mu        sync.Mutex
	prior     map[markKey]mark   // found at start: replaying when the last process ended
	live      map[markKey]replay // written by this process
}

// replay is a replay this process marked.
type replay struct {
	target uint64 // the index it applies from its own log
	began  time.Time
}

// loadMarks reads the marks a previous process left in dir (created if
// missing). lastCrash is the first line of that process's crash output.
func loadMarks(dir, lastCrash string) (*startMarks, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("replicas: start marks: %w", err)
	}
	m := &startMarks{dir: dir, lastCrash: lastCrash, prior: map[markKey]mark{}, live: map[markKey]replay{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("replicas: start marks: %w", err)
	}
	for _, e := range ents {
		k, ok := parseMarkName(e.Name())
		if !ok {
			continue
		}
		var mk mark
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			err = json.Unmarshal(data, &mk)
		}
		if err != nil {
			mk = mark{} // torn by the end it records: a suspect all the same
		}
		mk.Crashes++ // the end that left it
		m.prior[k] = mk
	}
	return m, nil
}

func markName(k markKey) string { return fmt.Sprintf("%d-%d", k.shard, k.replica) }

func parseMarkName(name string) (markKey, bool) {
	a, b, ok := strings.Cut(name, "-")
	if !ok {
		return markKey{}, false
	}
	shard, err1 := strconv.ParseUint(a, 10, 64)
	replica, err2 := strconv.ParseUint(b, 10, 64)
	return markKey{shard, replica}, err1 == nil && err2 == nil
}

// begin decides whether replica of shard may start its replay now and, if
// so, marks it, to be settled at index target: errWaitAlone, a
// *ReplayCrashes, or nil (marked).
func (m *startMarks) begin(shard, replica, target uint64, now time.Time) error {
	k := markKey{shard, replica}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, suspect := m.prior[k]
	if suspect && p.Alone && p.Crashes >= crashesToGiveUp {
		return &ReplayCrashes{Crashes: p.Crashes, LastCrash: m.lastCrash}
	}
	others := len(m.live)
	if _, ok := m.live[k]; ok {
		others--
	}
	if suspect && others > 0 {
		return errWaitAlone
	}
	data, _ := json.Marshal(mark{Crashes: p.Crashes, Alone: suspect})
	// Not synced: a process that ends keeps what it wrote (the page cache
	// outlives it), and a machine that ends is no crash loop.
	if err := os.WriteFile(filepath.Join(m.dir, markName(k)), data, 0o644); err != nil {
		return fmt.Errorf("replicas: write the start mark of shard %d replica %d: %w", shard, replica, err)
	}
	m.live[k] = replay{target: target, began: now}
	return nil
}

// settle removes the live marks whose replica has applied (applied(shard))
// up to its target, or began replayGrace before now.
func (m *startMarks) settle(applied func(shard uint64) (uint64, bool), now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, r := range m.live {
		if a, ok := applied(k.shard); ok && a >= r.target || now.Sub(r.began) >= replayGrace {
			m.removeLocked(k)
		}
	}
}

// drop removes every mark of shard: its replica's data is gone.
func (m *startMarks) drop(shard uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.keysLocked() {
		if k.shard == shard {
			m.removeLocked(k)
		}
	}
}

// close removes this process's marks: it ends cleanly.
func (m *startMarks) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.live {
		m.removeLocked(k)
	}
}

func (m *startMarks) keysLocked() map[markKey]bool {
	keys := map[markKey]bool{}
	for k := range m.prior {
		keys[k] = true
	}
	for k := range m.live {
		keys[k] = true
	}
	return keys
}

func (m *startMarks) removeLocked(k markKey) {
	delete(m.live, k)
	delete(m.prior, k)
	_ = os.Remove(filepath.Join(m.dir, markName(k)))
}
