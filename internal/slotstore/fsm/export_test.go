package fsm

import "github.com/cockroachdb/pebble/v2"

// SetBeforeCommit installs the test seam that sees each Update's batch.
func (s *StateMachine) SetBeforeCommit(fn func(*pebble.Batch)) { s.beforeCommit = fn }
