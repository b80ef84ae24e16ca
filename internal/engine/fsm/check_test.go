package fsm_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/digests"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/checks"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// handed is what a state machine handed its checker.
type handed struct {
	index  uint64
	ids    []uint64
	atMs   int64
	digest []slotstore.SlotDigest
}

func collectChecks(tb testing.TB, into *[]handed) func(*fsm.Config) {
	return func(c *fsm.Config) {
		c.OnCheck = func(g slotstore.GroupID, index uint64, ids []uint64, atMs int64, snap *pebble.Snapshot) {
			defer snap.Close()
			d, err := digests.Digest(context.Background(), snap, g, nil)
			if err != nil {
				tb.Errorf("digest: %v", err)
			}
			*into = append(*into, handed{index, ids, atMs, d})
		}
	}
}

// Two replicas given the same entries in different runs — one entry per
// Update, or all of them in one — hash the same state at the check's index:
// what the check's own entry wrote, nothing written after it.
func TestACheckHashesTheStateAtItsEntry(t *testing.T) {
	var gotA, gotB []handed
	dbA, dbB := openStore(t, t.TempDir()), openStore(t, t.TempDir())
	a := newSM(t, dbA, 1, allSlots(), collectChecks(t, &gotA))
	b := newSM(t, dbB, 1, allSlots(), collectChecks(t, &gotB))
	entries := []sm.Entry{
		{Index: 1, Cmd: encodeCmds(putKV("k1", "one"))},
		{Index: 2, Cmd: encodeCmds(putKV("k2", "two"), &meta.CheckState{Header: meta.Header{TimeMs: 1234}, ID: 7}, putKV("k3", "three"))},
		{Index: 3, Cmd: encodeCmds(putKV("k1", "changed"), &meta.CheckState{ID: 8})},
		{Index: 4, Cmd: encodeCmds(putKV("k4", "after"))},
	}
	for _, e := range entries {
		rs := mustOK(t, apply(t, a, e.Index, decodeCmds(t, e.Cmd)...))
		if e.Index == 2 && binary.BigEndian.Uint64(rs[1].Value) != 2 {
			t.Fatalf("the check's answer names index %x, want 2", rs[1].Value)
		}
	}
	if _, err := b.Update(entries); err != nil {
		t.Fatal(err)
	}
	if len(gotA) != 2 || len(gotB) != 2 {
		t.Fatalf("checks handed over: %d and %d, want 2 each", len(gotA), len(gotB))
	}
	for i, want := range []handed{{index: 2, ids: []uint64{7}}, {index: 3, ids: []uint64{8}}} {
		for _, got := range []handed{gotA[i], gotB[i]} {
			if got.index != want.index || len(got.ids) != 1 || got.ids[0] != want.ids[0] {
				t.Fatalf("check %d handed over at %d with %v, want %d with %v", i, got.index, got.ids, want.index, want.ids)
			}
		}
		if checks.Sum(gotA[i].digest) != checks.Sum(gotB[i].digest) {
			t.Fatalf("check at %d: replicas fed different runs differ:\n%+v\n%+v", want.index, gotA[i].digest, gotB[i].digest)
		}
	}
	if gotA[0].atMs != 1234 || gotB[0].atMs != 1234 {
		t.Fatalf("the check's proposal time handed over: %d, %d", gotA[0].atMs, gotB[0].atMs)
	}
	if checks.Sum(gotA[0].digest) == checks.Sum(gotA[1].digest) {
		t.Fatal("the second check saw the same state as the first")
	}
	// The run went on after each check: every entry applied, once.
	if applied(t, b) != 4 || getKV(t, b, "k4") == nil || string(getKV(t, b, "k1").Value) != "changed" {
		t.Fatalf("after the run: applied %d", applied(t, b))
	}
	sameSpan(t, "replicas fed different runs", span(t, dbB, 1), span(t, dbA, 1))
}

func decodeCmds(tb testing.TB, data []byte) []meta.Command {
	tb.Helper()
	raws, err := meta.DecodeEntry(data)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]meta.Command, len(raws))
	for i, r := range raws {
		if out[i], err = meta.DecodeCommand(r); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}
