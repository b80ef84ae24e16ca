package fsm_test

import (
	"bytes"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestWriteImage: a backup's image of a group says what it was cut at —
// the applied index, the owned slots (a fenced one too), each slot's
// change-log position — and a state machine on another store recovered
// from it holds the same rows at the same index.
func TestWriteImage(t *testing.T) {
	s := openGroup(t, openStore(t, t.TempDir()), 1, []slotstore.HashSlot{1, 2, 3})
	var idx uint64
	k1 := keysIn("img", 2, []slotstore.HashSlot{1})
	for _, k := range k1 {
		if r := apply1(t, s, &idx, putKV(k, "v-"+k)); !r.OK() {
			t.Fatal(r)
		}
	}
	if r := apply1(t, s, &idx, &meta.FenceSlot{Header: meta.Header{HashSlot: 3}}); !r.OK() {
		t.Fatal(r)
	}
	var img bytes.Buffer
	info, err := s.WriteImage(&img, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.Group != 1 || info.AppliedIndex != idx || len(info.Owned) != 3 || info.Positions[1] != 2 || info.Positions[2] != 0 {
		t.Fatalf("image info %+v (applied %d)", info, idx)
	}
	r := openGroup(t, openStore(t, t.TempDir()), 1, nil)
	if err := r.RecoverFromSnapshot(&img, nil); err != nil {
		t.Fatal(err)
	}
	if r.AppliedIndex() != idx {
		t.Fatalf("recovered at %d, want %d", r.AppliedIndex(), idx)
	}
	for _, k := range k1 {
		v, err := r.Lookup(&meta.GetKV{HashSlot: 1, Key: k})
		if err != nil || v.(*meta.KV) == nil || string(v.(*meta.KV).Value) != "v-"+k {
			t.Fatalf("recovered %s: %+v %v", k, v, err)
		}
	}
}
