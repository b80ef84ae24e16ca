package chaos

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// Deterministic histories the models must accept or reject: the models are
// the specification the chaos runs hold the server to, so they are tested
// on their own.

// step is one operation of a hand-written history; ops run one after the
// other, except that an unknown outcome never returns (it stays concurrent
// with everything after it).
type step struct {
	in  any
	out any
}

func history(steps ...step) []porcupine.Operation {
	var ops []porcupine.Operation
	for i, s := range steps {
		op := porcupine.Operation{ClientId: i, Input: s.in, Output: s.out, Call: int64(2 * i), Return: int64(2*i + 1)}
		if o, ok := s.out.(kvOutput); ok && o.Out == outUnknown {
			op.Return = never
		}
		if o, ok := s.out.(subOutput); ok && o.Out == outUnknown {
			op.Return = never
		}
		ops = append(ops, op)
	}
	return ops
}

func put(v string, rev uint64) step {
	return step{kvInput{Op: kvPut, Key: "k", Value: v}, kvOutput{Out: outOK, Revision: rev}}
}
func putUnknown(v string) step {
	return step{kvInput{Op: kvPut, Key: "k", Value: v}, kvOutput{Out: outUnknown}}
}
func cas(v string, matchRev uint64, matchValue string, out outcome, rev uint64) step {
	return step{kvInput{Op: kvPut, Key: "k", Value: v, Cond: condIfMatch, MatchRev: matchRev, MatchValue: matchValue},
		kvOutput{Out: out, Revision: rev}}
}
func create(v string, out outcome, rev uint64) step {
	return step{kvInput{Op: kvPut, Key: "k", Value: v, Cond: condIfNoneMatch}, kvOutput{Out: out, Revision: rev}}
}
func del(out outcome) step { return step{kvInput{Op: kvDelete, Key: "k"}, kvOutput{Out: out}} }
func get(v string, rev uint64) step {
	return step{kvInput{Op: kvGet, Key: "k"}, kvOutput{Out: outOK, Value: v, Revision: rev}}
}
func getAbsent() step { return step{kvInput{Op: kvGet, Key: "k"}, kvOutput{Out: outNotFound}} }

func TestKVModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		ok    bool
	}{
		{"put then read", []step{getAbsent(), put("a", 3), get("a", 3)}, true},
		{"cas on the current revision", []step{put("a", 3), cas("b", 3, "a", outOK, 5), get("b", 5)}, true},
		{"cas on an old revision refused", []step{put("a", 3), put("b", 4), cas("c", 3, "a", outRefused, 0), get("b", 4)}, true},
		{"create, delete, create", []step{create("a", outOK, 2), create("b", outRefused, 0), del(outOK), del(outNotFound), create("c", outOK, 9)}, true},
		{"unknown put seen later", []step{put("a", 3), putUnknown("b"), get("a", 3), get("b", 8), get("b", 8)}, true},
		{"unknown put never applied", []step{put("a", 3), putUnknown("b"), get("a", 3), get("a", 3)}, true},
		{"stale read", []step{put("a", 3), put("b", 4), get("a", 3)}, false},
		{"revision goes down", []step{put("a", 5), put("b", 4)}, false},
		{"revision goes down across a delete", []step{put("a", 5), del(outOK), put("b", 5)}, false},
		{"read with another revision", []step{put("a", 3), get("a", 4)}, false},
		{"cas on the current revision refused", []step{put("a", 3), cas("b", 3, "a", outRefused, 0)}, false},
		{"cas on an old revision applied", []step{put("a", 3), put("b", 4), cas("c", 3, "a", outOK, 6)}, false},
		{"create over an existing key", []step{put("a", 3), create("b", outOK, 4)}, false},
		{"read after delete", []step{put("a", 3), del(outOK), get("a", 3)}, false},
		{"delete of an absent key applied", []step{del(outOK)}, false},
		{"unknown put applied twice", []step{putUnknown("b"), get("b", 8), get("b", 9)}, false},
		{"lost write", []step{put("a", 3), getAbsent()}, false},
	} {
		got := porcupine.CheckOperations(kvModel.ToModel(), history(tc.steps...))
		if got != tc.ok {
			t.Errorf("%s: linearizable=%v, want %v", tc.name, got, tc.ok)
		}
	}
}

func sub(op subOp, uids uint8, out outcome, changed, count int) step {
	return step{subInput{Op: op, Channel: "c", UIDs: uids}, subOutput{Out: out, Changed: changed, Count: count}}
}
func list(members uint8) step {
	return step{subInput{Op: subList, Channel: "c"}, subOutput{Out: outOK, Members: members}}
}

func TestSubModel(t *testing.T) {
	const u0, u1, u2 = 1, 2, 4
	for _, tc := range []struct {
		name  string
		steps []step
		ok    bool
	}{
		{"add, list, remove, test", []step{list(0), sub(subAdd, u0|u1, outOK, 2, 2), list(u0 | u1),
			sub(subRemove, u0|u2, outOK, 1, 1), sub(subHas, u0, outNotFound, 0, 0), sub(subHas, u1, outOK, 0, 0)}, true},
		{"adding again changes nothing", []step{sub(subAdd, u0, outOK, 1, 1), sub(subAdd, u0|u1, outOK, 1, 2)}, true},
		{"delete one", []step{sub(subAdd, u0, outOK, 1, 1), sub(subDelete, u0, outOK, 0, 0), sub(subDelete, u0, outNotFound, 0, 0), list(0)}, true},
		{"unknown add applied", []step{sub(subAdd, u2, outUnknown, 0, 0), list(0), list(u2)}, true},
		{"an add counted twice", []step{sub(subAdd, u0, outOK, 1, 1), sub(subAdd, u0, outOK, 1, 2)}, false},
		{"delete of a non-member", []step{sub(subDelete, u0, outOK, 0, 0)}, false},
		{"stale list", []step{sub(subAdd, u0, outOK, 1, 1), list(0)}, false},
		{"unknown add undone", []step{sub(subAdd, u2, outUnknown, 0, 0), list(u2), list(0)}, false},
		{"foreign member", []step{{subInput{Op: subList, Channel: "c"}, subOutput{Out: outOK, Foreign: true}}}, false},
	} {
		got := porcupine.CheckOperations(subModel.ToModel(), history(tc.steps...))
		if got != tc.ok {
			t.Errorf("%s: linearizable=%v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestLostWriteCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		final kvOutput
		lost  int
	}{
		{"last put shown", []step{put("a", 3), put("b", 4)}, kvOutput{Out: outOK, Value: "b", Revision: 4}, 0},
		{"last put gone", []step{put("a", 3), put("b", 4)}, kvOutput{Out: outOK, Value: "a", Revision: 3}, 1},
		{"put gone, key absent", []step{put("a", 3)}, kvOutput{Out: outNotFound}, 1},
		{"put then a delete of unknown outcome", []step{put("a", 3), {kvInput{Op: kvDelete, Key: "k"}, kvOutput{Out: outUnknown}}}, kvOutput{Out: outNotFound}, 0},
		{"later revision than the final one", []step{putUnknown("b"), put("a", 9)}, kvOutput{Out: outOK, Value: "b", Revision: 7}, 1},
		{"delete undone", []step{put("a", 3), del(outOK)}, kvOutput{Out: outOK, Value: "a", Revision: 3}, 1},
	} {
		var r lostReport
		checkLostKV(history(tc.steps...), map[string]kvOutput{"k": tc.final}, &r)
		if r.lost != tc.lost {
			t.Errorf("%s: %d lost, want %d (%v)", tc.name, r.lost, tc.lost, r.details)
		}
	}
	var r lostReport
	checkLostSubs(history(sub(subAdd, 1, outOK, 1, 1), sub(subRemove, 3, outOK, 1, 0)), map[string]uint8{"c": 1}, &r)
	if r.lost != 1 || r.acked != 3 {
		t.Errorf("subscribers: %d of %d acknowledged changes lost, want 1 of 3 (the remove of u0) (%v)", r.lost, r.acked, r.details)
	}
}
