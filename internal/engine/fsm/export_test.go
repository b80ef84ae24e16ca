package fsm

import "github.com/cockroachdb/pebble/v2"

// SetBeforeCommit installs the test seam that sees each Update's batch.
func (s *StateMachine) SetBeforeCommit(fn func(*pebble.Batch)) { s.beforeCommit = fn }

// SetAfterCommit installs the test seam between an Update's commit and its
// publish.
func (s *StateMachine) SetAfterCommit(fn func()) { s.afterCommit = fn }

// SetAfterIngest installs the test seam between a recovery's ingest and
// its load.
func (s *StateMachine) SetAfterIngest(fn func()) { s.afterIngest = fn }

// SetBeforeGet installs the test seam before a lookup's point read.
func (s *StateMachine) SetBeforeGet(fn func()) { s.beforeGet = fn }
