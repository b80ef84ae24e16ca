package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"slotmeta/internal/slotstore"
)

// The fault schedule: a small table of fault kinds, drawn by weight from the
// schedule's seeded random source every 150–400 ms while the clients run.
// To add a kind, write its inject function and add a row.

// faultKind is one kind of fault. inject puts it in place now (it may block
// until it is) and describes what it did; heal, if not nil, undoes it. The
// schedule heals a fault before it injects the next one and before the
// final reads, so at most one fault is in place at a time.
type faultKind struct {
	name   string
	weight int
	inject func(f *faultEnv) (desc string, heal func())
}

var faultKinds = []faultKind{
	{name: "leader-transfer", weight: 2, inject: injectLeaderTransfer},
	{name: "restart", weight: 1, inject: injectRestart},
}

// faultEnv is what an inject function works with. It runs on the test's
// goroutine (t.Fatal is fine); the clients run beside it.
type faultEnv struct {
	tc  *testCluster
	rng *rand.Rand
}

// injectLeaderTransfer moves a random group's leadership to a random node
// (through node 1, which forwards to the group's leader).
func injectLeaderTransfer(f *faultEnv) (string, func()) {
	g := slotstore.GroupID(f.rng.Intn(f.tc.groups) + 1)
	target := slotstore.NodeID(f.rng.Intn(f.tc.size()) + 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := f.tc.c.Nodes[0].TransferLeader(ctx, g, target)
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
// the fault in place). It returns the faults injected, in order, with every
// fault healed.
func runFaults(ctx context.Context, f *faultEnv, after func()) []injected {
	total := 0
	for _, k := range faultKinds {
		total += k.weight
	}
	var done []injected
	var heal func()
	for {
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(150+f.rng.Intn(250)) * time.Millisecond):
		}
		if ctx.Err() != nil {
			break
		}
		if heal != nil {
			heal()
		}
		k := pickFault(f.rng.Intn(total))
		var desc string
		desc, heal = k.inject(f)
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
