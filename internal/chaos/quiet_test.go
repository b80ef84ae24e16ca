package chaos

import (
	"fmt"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// The quiet fault, for schedules that run with quiesce: the clients stop,
// the slot groups go quiet until dragonboat quiesces them (no heartbeats;
// their followers never campaign by themselves), and then the leader of a
// group is cut off or restarted while nothing touches the cluster. The
// clients resume at once, so the first writes and reads after the fault are
// the ones that must wake the group (package waker) — the case that
// busy schedules, whose groups never stay idle for the quiesce threshold,
// never reach.

// quietGate holds the workload clients back while a schedule is quiet.
type quietGate struct {
	mu   sync.Mutex
	hold chan struct{} // non-nil while quiet; closed to release
}

// wait blocks while the gate is held.
func (g *quietGate) wait() {
	if g == nil {
		return
	}
	g.mu.Lock()
	hold := g.hold
	g.mu.Unlock()
	if hold != nil {
		<-hold
	}
}

// close holds the clients at their next operation; release lets them go.
func (g *quietGate) close() (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	hold := make(chan struct{})
	g.hold = hold
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.hold = nil
			g.mu.Unlock()
			close(hold)
		})
	}
}

// quietClass is the class of the quiet fault: a quiesce schedule injects it
// among its first faults, others never.
const quietClass = "quiet"

var quietKind = faultKind{name: "quiet", class: quietClass, hold: [2]int{300, 800}, inject: injectQuiet}

// quiesceWithin bounds the wait for the groups to quiesce: dragonboat's
// threshold is ten election timeouts (2 s at the test clusters' 20 ms RTT).
const quiesceWithin = 8 * time.Second

// injectQuiet holds the clients until every slot group is quiesced (or
// quiesceWithin passed: said in the description), then cuts off or
// restarts a random group's leader and lets the clients go.
func injectQuiet(f *faultEnv) (string, func()) {
	release := f.quiet.close()
	defer release()
	start := time.Now()
	_, quiet := testutil.Eventually(quiesceWithin, 50*time.Millisecond, func() (bool, string) {
		return f.tc.quiesced(), ""
	})
	waited := fmt.Sprintf("quiet %v (%s)", time.Since(start).Round(100*time.Millisecond), map[bool]string{true: "quiesced", false: "NOT quiesced"}[quiet])
	g := slotstore.GroupID(f.rng.Intn(f.tc.groups) + 1)
	x := f.tc.groupLeader(g)
	if x == 0 {
		return waited + fmt.Sprintf(", g%d has no leader", g), nil
	}
	if f.rng.Intn(2) == 0 {
		f.tc.c.Net.Isolate(x)
		return waited + fmt.Sprintf(", then isolate n%d%s", x, f.tc.roleOf(x)), f.tc.c.Net.Heal
	}
	role := f.tc.roleOf(x)
	f.tc.restart(int(x) - 1)
	return waited + fmt.Sprintf(", then restart n%d%s", x, role), nil
}

// silentFor is how long a leader must not have heard a follower for its
// group to count as quiesced: 30 heartbeat intervals of the test clusters'
// 20 ms RTT (a follower answers every heartbeat; a quiesced group sends
// none).
const silentFor = 600 * time.Millisecond

// quiesced reports whether every slot group looks quiesced from its
// leader: no Raft message from any of its followers for silentFor.
func (tc *testCluster) quiesced() bool {
	st := tc.ctrlState()
	for g, grp := range st.Groups {
		leader := tc.groupLeader(g)
		if leader == 0 {
			return false
		}
		for node := range grp.Peers {
			if node == leader {
				continue
			}
			ago, ok := tc.c.Nodes[leader-1].Testing().HeardAgo(g, node)
			if ok && ago < silentFor {
				return false
			}
		}
	}
	return true
}
