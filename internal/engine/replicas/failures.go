package replicas

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Replicas that could not start (issue 51). One replica the engine cannot
// load — a damaged Raft log or state — must not take its node down: the
// node goes on without it, serves its other groups, and says which replica
// failed and why (its status, readiness, the group's view, a metric) until
// the replica is moved off the node, which rebuilds it elsewhere from a
// snapshot and removes what it left here.
//
// The engine reports some of these as errors and panics on others while it
// loads the replica's log and state (dragonboat's raft.loadState:
// "got out of range state", and its other checks). A panic raised inside
// StartOnDiskReplica runs on the caller's goroutine and is recovered here;
// the NodeHost's lock is released by its own defer (nodehost.go startShard).
// A replica the engine panicked on is not tried again by this process: what
// it left half-made is not the engine's to clean up, and the next attempt
// would panic the same way. A returned error is tried again each round.

// EnginePanic is a panic the engine raised while starting a replica.
type EnginePanic struct {
	Value any
}

func (e *EnginePanic) Error() string {
	return "the engine panicked loading the replica: " + oneLine(fmt.Sprint(e.Value))
}

// startEngine runs start, a call into the engine, and returns a panic it
// raised as an *EnginePanic.
func startEngine(start func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &EnginePanic{Value: v}
		}
	}()
	return start()
}

// failures are the replicas this node could not start, by group.
type failures struct {
	mu sync.Mutex
	m  map[slotstore.GroupID]slotstore.ReplicaFailure
}

// failed records that replica of g could not start, for err.
func (f *failures) failed(g slotstore.GroupID, replica uint64, err error, now time.Time) slotstore.ReplicaFailure {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[slotstore.GroupID]slotstore.ReplicaFailure{}
	}
	rf, ok := f.m[g]
	if !ok || rf.ReplicaID != replica {
		rf = slotstore.ReplicaFailure{Group: g, ReplicaID: replica, SinceMs: now.UnixMilli()}
	}
	var p *EnginePanic
	var c *ReplayCrashes
	var fe *Fenced
	rf.Reason, rf.Fenced = oneLine(err.Error()), errors.As(err, &fe)
	rf.Panicked = errors.As(err, &p) || errors.As(err, &c) || rf.Fenced
	rf.Attempts++
	f.m[g] = rf
	return rf
}

// gaveUp reports whether replica of g is not to be tried again: the engine
// panicked on it in this process.
func (f *failures) gaveUp(g slotstore.GroupID, replica uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	rf, ok := f.m[g]
	return ok && rf.ReplicaID == replica && rf.Panicked
}

// forget drops g's failure: its replica started.
func (f *failures) forget(g slotstore.GroupID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, g)
}

// retain keeps the failures keep says are still the node's.
func (f *failures) retain(keep func(slotstore.ReplicaFailure) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	maps.DeleteFunc(f.m, func(_ slotstore.GroupID, rf slotstore.ReplicaFailure) bool { return !keep(rf) })
}

// list returns every failure, by group.
func (f *failures) list() []slotstore.ReplicaFailure {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]slotstore.ReplicaFailure, 0, len(f.m))
	for _, g := range slices.Sorted(maps.Keys(f.m)) {
		out = append(out, f.m[g])
	}
	return out
}

// oneLine keeps the first line of s (a panic's value may carry more) and
// bounds it: it goes into statuses, logs and readiness answers.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const most = 512
	if len(s) > most {
		s = s[:most] + "…"
	}
	return s
}
