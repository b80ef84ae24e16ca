package checks

import (
	"errors"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func TestCompare(t *testing.T) {
	a := []slotstore.SlotDigest{{Slot: 1, Rows: 2, Bytes: 10, Hash: 100}, {Slot: 2, Rows: 1, Bytes: 5, Hash: 7}}
	b := []slotstore.SlotDigest{{Slot: 1, Rows: 2, Bytes: 10, Hash: 101}, {Slot: 2, Rows: 1, Bytes: 5, Hash: 7}}
	c := []slotstore.SlotDigest{{Slot: 1, Rows: 2, Bytes: 10, Hash: 100}}
	ans := func(node slotstore.NodeID, slots []slotstore.SlotDigest) Answer {
		return Answer{Node: node, ReplicaID: uint64(node) * 10, Digest: slotstore.ReplicaDigest{Index: 9, Slots: slots}}
	}
	failed := Answer{Node: 3, ReplicaID: 30, Err: errors.New("unreachable")}
	for _, tc := range []struct {
		name     string
		answers  []Answer
		verdict  slotstore.CheckVerdict
		minority []slotstore.NodeID
		differ   []slotstore.HashSlot
	}{
		{"all agree", []Answer{ans(1, a), ans(2, a), ans(3, a)}, slotstore.CheckConsistent, nil, nil},
		{"one silent", []Answer{ans(1, a), ans(2, a), failed}, slotstore.CheckIncomplete, nil, nil},
		{"one differs", []Answer{ans(1, a), ans(2, b), ans(3, a)}, slotstore.CheckDiverged, []slotstore.NodeID{2}, []slotstore.HashSlot{1}},
		{"one lacks a slot, one silent", []Answer{ans(1, a), ans(2, c), ans(4, a), ans(5, a), failed}, slotstore.CheckDiverged, []slotstore.NodeID{2}, []slotstore.HashSlot{2}},
		{"three ways", []Answer{ans(1, a), ans(2, b), ans(3, c)}, slotstore.CheckNoMajority, nil, []slotstore.HashSlot{1, 2}},
		{"two of three differ, one silent", []Answer{ans(1, a), ans(2, b), failed}, slotstore.CheckNoMajority, nil, []slotstore.HashSlot{1}},
		{"none answered", []Answer{failed}, slotstore.CheckIncomplete, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(5, 77, tc.answers)
			if got.Verdict != tc.verdict || !equal(got.Minority, tc.minority) || !equal(got.Differing, tc.differ) {
				t.Fatalf("Compare = %s minority %v differing %v, want %s %v %v (%s)", got.Verdict, got.Minority, got.Differing, tc.verdict, tc.minority, tc.differ, Describe(got))
			}
			for i, rc := range got.Replicas {
				wantAgree := tc.answers[i].Err == nil && tc.verdict != slotstore.CheckNoMajority && !contains(tc.minority, rc.Node)
				if rc.Agrees != wantAgree {
					t.Fatalf("replica on node %d agrees = %v, want %v", rc.Node, rc.Agrees, wantAgree)
				}
			}
		})
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
