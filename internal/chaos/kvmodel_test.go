package chaos

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The business-key model: one register per key (partitioned by key) holding
// a value and its revision, with compare-and-set and delete. Every value a
// client writes is unique in the schedule, so a value names one write.
//
// Revisions are the group's (they grow across keys), so the model does not
// predict them; it holds the server to what they must satisfy:
//   - a write's revision is above every revision the key had before
//     (strictly increasing per key, across deletes too: Floor);
//   - a read of a value returns the revision its write was answered with;
//   - If-Match "<r>" holds exactly when the current write is the one whose
//     revision is r (the client names it by the value it saw with r), so a
//     412 when nothing else wrote in between is a violation, and so is a
//     success after another write;
//   - If-None-Match: * holds exactly when the key is absent.
//
// A write whose outcome is unknown may or may not have applied; if it did,
// its revision is unknown (Rev 0) until a read shows it.

type kvOp uint8

const (
	kvGet kvOp = iota
	kvPut
	kvDelete
)

type kvCond uint8

const (
	condNone        kvCond = iota
	condIfMatch            // If-Match: "<MatchRev>", the revision the client saw with MatchValue
	condIfNoneMatch        // If-None-Match: *
)

type kvInput struct {
	Op         kvOp
	Key        string
	Value      string // put
	Cond       kvCond
	MatchRev   uint64
	MatchValue string
}

type kvOutput struct {
	Out      outcome
	Value    string // get: the value read
	Revision uint64 // get, and a put that succeeded
}

type kvState struct {
	Exists bool
	Value  string
	Rev    uint64 // revision of Value; 0 when a write of unknown outcome put it there
	Floor  uint64 // every later write's revision must be above it
}

// holds says whether in's precondition holds in s.
func (s kvState) holds(in kvInput) bool {
	switch in.Cond {
	case condIfMatch:
		return s.Exists && s.Value == in.MatchValue && (s.Rev == 0 || s.Rev == in.MatchRev)
	case condIfNoneMatch:
		return !s.Exists
	}
	return true
}

func kvStep(s kvState, in kvInput, out kvOutput) []any {
	switch in.Op {
	case kvGet:
		switch {
		case out.Out == outNotFound && !s.Exists:
			return []any{s}
		case out.Out == outOK && s.Exists && s.Value == out.Value &&
			(s.Rev == out.Revision || s.Rev == 0 && out.Revision > s.Floor):
			s.Rev, s.Floor = out.Revision, max(s.Floor, out.Revision)
			return []any{s}
		}
		return nil
	case kvPut:
		applied := kvState{Exists: true, Value: in.Value, Floor: s.Floor}
		switch out.Out {
		case outOK:
			if s.holds(in) && out.Revision > s.Floor && (s.Rev == 0 || out.Revision > s.Rev) {
				applied.Rev, applied.Floor = out.Revision, out.Revision
				return []any{applied}
			}
		case outRefused:
			if !s.holds(in) {
				return []any{s}
			}
		case outUnknown:
			if s.holds(in) {
				return []any{s, applied}
			}
			return []any{s}
		}
		return nil
	case kvDelete:
		gone := kvState{Floor: s.Floor}
		switch out.Out {
		case outOK:
			if s.Exists && s.holds(in) {
				return []any{gone}
			}
		case outNotFound:
			if !s.Exists && in.Cond == condNone {
				return []any{s}
			}
		case outRefused:
			if !s.holds(in) {
				return []any{s}
			}
		case outUnknown:
			if s.Exists && s.holds(in) {
				return []any{s, gone}
			}
			return []any{s}
		}
		return nil
	}
	return nil
}

var kvModel = porcupine.NondeterministicModel{
	Partition: partitionBy(func(in any) string { return in.(kvInput).Key }),
	Init:      func() []any { return []any{kvState{}} },
	Step: func(state, input, output any) []any {
		return kvStep(state.(kvState), input.(kvInput), output.(kvOutput))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		cond := ""
		switch in.Cond {
		case condIfMatch:
			cond = fmt.Sprintf(" if-match %d(%s)", in.MatchRev, in.MatchValue)
		case condIfNoneMatch:
			cond = " if-none-match"
		}
		switch in.Op {
		case kvGet:
			if out.Out == outOK {
				return fmt.Sprintf("get(%s) → %s@%d", in.Key, out.Value, out.Revision)
			}
			return fmt.Sprintf("get(%s) → %s", in.Key, out.Out)
		case kvPut:
			if out.Out == outOK {
				return fmt.Sprintf("put(%s,%s)%s → @%d", in.Key, in.Value, cond, out.Revision)
			}
			return fmt.Sprintf("put(%s,%s)%s → %s", in.Key, in.Value, cond, out.Out)
		}
		return fmt.Sprintf("delete(%s)%s → %s", in.Key, cond, out.Out)
	},
	DescribeState: func(state any) string {
		s := state.(kvState)
		if !s.Exists {
			return fmt.Sprintf("absent (floor %d)", s.Floor)
		}
		if s.Rev == 0 {
			return fmt.Sprintf("%s@? (floor %d)", s.Value, s.Floor)
		}
		return fmt.Sprintf("%s@%d", s.Value, s.Rev)
	},
}

// partitionBy splits a history by the partition key of each operation's input.
func partitionBy(key func(input any) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			k := key(op.Input)
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, byKey[k])
		}
		return out
	}
}
