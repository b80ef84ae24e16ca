package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The fault schedule: a small table of fault kinds, drawn by weight from the
// schedule's seeded random source while the clients run. A fault stays in
// place for its hold time (150–400 ms unless its kind says otherwise), then
// it is healed and the next one injected. Every schedule starts with one
// fault of each class of mustClasses, in a seeded order, so that even a
// short schedule has a network fault, a slow disk, a snapshot install, a
// replica move under controller leader loss, a move followed by restarts of
// the nodes it changed, and a live hash-slot move under the clients' writes
// — and a schedule that runs with quiesce a quiet fault (quiet_test.go: a
// group leader lost while every group is quiesced); weighted draws follow.
// To add a kind, write its inject function and add a row.

// faultKind is one kind of fault. inject puts it in place now (it may block
// until it is) and describes what it did; heal, if not nil, undoes it. The
// schedule heals a fault before it injects the next one and before the
// final reads, so at most one fault is in place at a time (a replica move
// started by one fault runs on in the background: the controller carries it).
type faultKind struct {
	name   string
	class  string // mustClasses: every schedule starts with one kind of each
	weight int
	// hold is how long the fault stays, in ms ([0, 0]: 150–400).
	hold   [2]int
	inject func(f *faultEnv) (desc string, heal func())
}

var faultKinds = []faultKind{
	{name: "leader-transfer", weight: 2, inject: injectLeaderTransfer},
	{name: "restart", weight: 1, inject: injectRestart},
	{name: "isolate", class: "net", weight: 2, inject: injectIsolate},
	{name: "partition", class: "net", weight: 2, inject: injectPartition},
	{name: "one-way", class: "net", weight: 1, inject: injectOneWay},
	{name: "lossy", class: "net", weight: 1, inject: injectLossy},
	{name: "slow-disk", class: "disk", weight: 1, inject: injectSlowDisk},
	{name: "lag", class: "snapshot", weight: 1, hold: [2]int{300, 700}, inject: injectLag},
	{name: "move", class: "move", weight: 1, inject: injectMove},
	{name: "move-restart", class: "move-restart", weight: 1, inject: injectMoveRestart},
	{name: "slot-move", class: "slot-move", weight: 2, inject: injectSlotMove},
}

// mustClasses are the classes every schedule injects first, one kind each.
var mustClasses = []string{"net", "disk", "snapshot", "move", "move-restart", "slot-move"}

// faultEnv is what an inject function works with. It runs on the test's
// goroutine (t.Fatal is fine); the clients run beside it.
type faultEnv struct {
	tc    *testCluster
	rng   *rand.Rand
	moves *moveLog
	quiet *quietGate // the clients' gate in a quiesce schedule (nil: no quiet fault)
}

// injectLeaderTransfer moves a random group's leadership to a random node,
// through the group's leader (the node that transfers; it refuses a target
// it does not hear).
func injectLeaderTransfer(f *faultEnv) (string, func()) {
	g := slotstore.GroupID(f.rng.Intn(f.tc.groups) + 1)
	target := slotstore.NodeID(f.rng.Intn(f.tc.size()) + 1)
	leader := f.tc.groupLeader(g)
	if leader == 0 {
		return fmt.Sprintf("transfer g%d→n%d (no leader)", g, target), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := f.tc.c.Nodes[leader-1].TransferLeader(ctx, g, target)
	return fmt.Sprintf("transfer g%d→n%d (%s)", g, target, okOr(err)), nil
}

// injectRestart closes a random node and starts it again on its data; it
// returns once the cluster is ready again.
func injectRestart(f *faultEnv) (string, func()) {
	i := f.rng.Intn(f.tc.size())
	f.tc.restart(i)
	return fmt.Sprintf("restart n%d", i+1), nil
}

func okOr(err error) string {
	if err == nil {
		return "ok"
	}
	return "failed"
}

// injected is one fault a schedule injected.
type injected struct{ kind, desc string }

// runFaults injects faults until ctx ends, calling after each one (with
// the fault in place), but not before it has injected one kind of each of
// mustClasses (it may run past ctx for them). It returns the faults
// injected, in order, with every fault healed.
func runFaults(ctx context.Context, f *faultEnv, after func()) []injected {
	total := 0
	for _, k := range faultKinds {
		total += k.weight
	}
	classes := mustClasses
	if f.quiet != nil {
		classes = append(slices.Clone(mustClasses), quietClass)
	}
	first := f.rng.Perm(len(classes))
	var done []injected
	var heal func()
	hold := [2]int{}
	for {
		lo, hi := 150, 400
		if hold != [2]int{} {
			lo, hi = hold[0], hold[1]
		}
		timer := time.NewTimer(time.Duration(lo+f.rng.Intn(hi-lo)) * time.Millisecond)
		if len(done) < len(first) {
			<-timer.C // the fault's hold time
		} else {
			select {
			case <-ctx.Done():
				timer.Stop()
			case <-timer.C:
			}
		}
		if ctx.Err() != nil && len(done) >= len(first) {
			break
		}
		if heal != nil {
			heal()
			heal = nil
		}
		var k faultKind
		if n := len(done); n < len(first) {
			k = pickClass(classes[first[n]], f.rng)
		} else {
			k = pickFault(f.rng.Intn(total))
		}
		var desc string
		desc, heal = k.inject(f)
		hold = k.hold
		done = append(done, injected{k.name, desc})
		after()
	}
	if heal != nil {
		heal()
	}
	return done
}

// pickFault returns the fault kind at weighted position n.
func pickFault(n int) faultKind {
	for _, k := range faultKinds {
		if n < k.weight {
			return k
		}
		n -= k.weight
	}
	return faultKinds[len(faultKinds)-1]
}

// pickClass draws a kind of the class by weight.
func pickClass(class string, rng *rand.Rand) faultKind {
	if class == quietClass {
		return quietKind
	}
	var ks []faultKind
	total := 0
	for _, k := range faultKinds {
		if k.class == class {
			ks, total = append(ks, k), total+k.weight
		}
	}
	n := rng.Intn(total)
	for _, k := range ks {
		if n < k.weight {
			return k
		}
		n -= k.weight
	}
	return ks[len(ks)-1]
}
