package fsm

import (
	"encoding/binary"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// State checks (issue 52). A meta.CheckState entry asks every replica to
// hash its state at that entry's index. Update commits what it applied up
// to and including the entry, takes a store snapshot there and hands it to
// Config.OnCheck (package checks hashes it in the background, paced); the
// entries after it go into a new batch. Splitting the run changes nothing
// that is replicated — the applied index, revision and idempotency records
// are persisted with each batch as they are with one — so the snapshot of
// every replica is of the same state, whatever runs its engine gave it.
//
// The command writes nothing: a replica that is asked twice under one ID
// (a proposal retried) hands both over and the checker keeps the first.

// applyCheck notes a check for the end of the entry; its answer carries the
// entry's index (8 bytes, big-endian) in Value.
func (a *applier) applyCheck(c *meta.CheckState) meta.Result {
	if len(a.checks) == 0 {
		a.checkAtMs = a.timeMs
	}
	a.checks = append(a.checks, c.ID)
	return meta.Result{Revision: a.revision, Value: binary.BigEndian.AppendUint64(nil, a.index)}
}

// handOverChecks gives the checker a snapshot of the state just committed
// at index, for the checks ids proposed at atMs.
func (s *StateMachine) handOverChecks(index uint64, ids []uint64, atMs int64) {
	if s.cfg.OnCheck == nil {
		return
	}
	s.cfg.OnCheck(s.cfg.Group, index, ids, atMs, s.db.NewSnapshot())
}
