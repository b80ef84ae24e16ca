package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/cespare/xxhash/v2"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// StateMachine is the controller's dragonboat IStateMachine.
type StateMachine struct {
	mu       sync.RWMutex
	state    *State
	onChange func(*State)
}

var _ sm.IStateMachine = (*StateMachine)(nil)

// NewStateMachine returns an empty state machine. onChange, if set, receives
// a copy of the state after every applied entry and after recovery; it runs
// on dragonboat's apply goroutine and must not block.
func NewStateMachine(onChange func(*State)) *StateMachine {
	return &StateMachine{state: NewState(), onChange: onChange}
}

// Snapshot returns a copy of the current state.
func (s *StateMachine) Snapshot() *State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state.Clone()
}

// Update applies one command. A malformed command is answered, not applied.
func (s *StateMachine) Update(e sm.Entry) (sm.Result, error) {
	var res Result
	s.mu.Lock()
	c, err := DecodeCommand(e.Cmd)
	if err != nil {
		res = Result{Message: err.Error()}
	} else {
		res = apply(s.state, c)
	}
	s.state.AppliedIndex = e.Index
	var copy *State
	if s.onChange != nil {
		copy = s.state.Clone()
	}
	s.mu.Unlock()
	if copy != nil {
		s.onChange(copy)
	}
	data, _ := json.Marshal(res)
	v := uint64(0)
	if res.OK {
		v = 1
	}
	return sm.Result{Value: v, Data: data}, nil
}

// StateQuery asks for a copy of the state. Answer: *State.
type StateQuery struct{}

// Barrier asks nothing: read linearizably (dragonboat's SyncRead), it
// returns once the replica applied every command committed before it.
// Answer: nil.
type Barrier struct{}

// Lookup answers StateQuery and Barrier.
func (s *StateMachine) Lookup(q any) (any, error) {
	switch q.(type) {
	case StateQuery:
		return s.Snapshot(), nil
	case Barrier:
		return nil, nil
	}
	return nil, fmt.Errorf("controller: unknown query %T", q)
}

// SaveSnapshot writes the state as JSON.
func (s *StateMachine) SaveSnapshot(w io.Writer, _ sm.ISnapshotFileCollection, _ <-chan struct{}) error {
	st := s.Snapshot()
	return json.NewEncoder(w).Encode(st)
}

// RecoverFromSnapshot replaces the state with a saved one.
func (s *StateMachine) RecoverFromSnapshot(r io.Reader, _ []sm.SnapshotFile, _ <-chan struct{}) error {
	st, err := decodeState(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.state = st
	copy := st.Clone()
	s.mu.Unlock()
	if s.onChange != nil {
		s.onChange(copy)
	}
	return nil
}

// decodeState reads a state as SaveSnapshot writes it.
func decodeState(r io.Reader) (*State, error) {
	st := NewState()
	dec := json.NewDecoder(io.LimitReader(r, 64<<20))
	if err := dec.Decode(st); err != nil {
		return nil, fmt.Errorf("controller: corrupt snapshot: %w", err)
	}
	if st.Nodes == nil {
		st.Nodes = map[slotstore.NodeID]*Node{}
	}
	if st.Groups == nil {
		st.Groups = map[slotstore.GroupID]*Group{}
	}
	return st, nil
}

// Digest hashes the state (xxhash64 of its snapshot's JSON): replicas of
// the controller that applied the same log to the same index have the same
// digest, however they got there — the state is hashed as a replica that
// recovered it from a snapshot holds it, so that an empty list and none
// hash alike.
func (s *State) Digest() (uint64, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return 0, err
	}
	st, err := decodeState(bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	if b, err = json.Marshal(st); err != nil {
		return 0, err
	}
	return xxhash.Sum64(b), nil
}

// Close releases nothing.
func (s *StateMachine) Close() error { return nil }
