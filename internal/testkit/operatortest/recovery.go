package operatortest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Recovery is the fake node's lost-quorum recovery (slotstore.Recovery):
// RecoverGroup refuses without the confirmation, an unknown group, and a
// group whose leader the fake knows (its quorum is not lost); otherwise it
// reports node Self recovered the group with nothing lost. Every call is
// recorded in the fake's Calls.
type Recovery struct {
	f *Fake

	mu      sync.Mutex
	reports []slotstore.RecoveryReport // newest first
}

// Recovery returns the fake's recovery.
func (f *Fake) Recovery() slotstore.Recovery {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.recovery == nil {
		f.recovery = &Recovery{f: f}
	}
	return f.recovery
}

func (r *Recovery) RecoverGroup(_ context.Context, g slotstore.GroupID, accept bool) (slotstore.RecoveryReport, error) {
	r.f.Record(fmt.Sprintf("RecoverGroup %d %t", g, accept))
	if !accept {
		return slotstore.RecoveryReport{}, slotstore.Errorf(slotstore.CodeInvalidArgument, "a lost-quorum recovery may lose acknowledged writes: confirm that you accept it (accept_data_loss)")
	}
	r.f.mu.Lock()
	v, ok := r.f.groups[g]
	r.f.mu.Unlock()
	switch {
	case !ok:
		return slotstore.RecoveryReport{}, slotstore.Errorf(slotstore.CodeNotFound, "group %d does not exist", g)
	case v.Leader != 0:
		return slotstore.RecoveryReport{}, slotstore.Errorf(slotstore.CodeFailedPrecondition, "group %d has a leader: its quorum is not lost", g)
	}
	rep := slotstore.RecoveryReport{Group: g, Node: r.f.Self, OldReplica: uint64(r.f.Self), Replica: 9, RecoveredIndex: 40,
		SurvivorApplied: 40, SurvivorCommit: 40, SurvivorLast: 40, HighestKnown: 40, HighestKnownBy: r.f.Self,
		HashSlots: []slotstore.HashSlot{}, Message: "nothing known committed is lost"}
	for _, n := range v.Voters {
		rep.Tombstoned = append(rep.Tombstoned, slotstore.TombstonedReplica{Node: n, Replica: uint64(n)})
	}
	r.mu.Lock()
	r.reports = slices.Insert(r.reports, 0, rep)
	r.mu.Unlock()
	return rep, nil
}

func (r *Recovery) Recoveries() []slotstore.RecoveryReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reports)
}

// CheckGroup answers that every replica of an existing group agrees.
func (r *Recovery) CheckGroup(_ context.Context, g slotstore.GroupID) (slotstore.GroupCheck, error) {
	r.f.Record(fmt.Sprintf("CheckGroup %d", g))
	r.f.mu.Lock()
	_, ok := r.f.groups[g]
	r.f.mu.Unlock()
	if !ok {
		return slotstore.GroupCheck{}, slotstore.Errorf(slotstore.CodeNotFound, "group %d does not exist", g)
	}
	return slotstore.GroupCheck{Group: g, CheckID: 1, Verdict: slotstore.CheckConsistent}, nil
}
