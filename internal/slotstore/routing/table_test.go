package routing_test

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// rotatedGroups maps hash slot s to group ((s+shift) % n) + 1.
func rotatedGroups(n, shift int) [slotstore.HashSlotCount]slotstore.GroupID {
	var gs [slotstore.HashSlotCount]slotstore.GroupID
	for s := range gs {
		gs[s] = slotstore.GroupID((s+shift)%n + 1)
	}
	return gs
}

func mustTable(t testing.TB, rev uint64, gs [slotstore.HashSlotCount]slotstore.GroupID) *routing.Table {
	t.Helper()
	tb, err := routing.NewTable(rev, gs)
	if err != nil {
		t.Fatalf("NewTable(%d): %v", rev, err)
	}
	return tb
}

func TestInitialTable(t *testing.T) {
	for _, tc := range []struct {
		n     int
		sizes []int // expected range size per group, or nil for "n ranges of 256/n"
	}{
		{n: 1, sizes: []int{256}},
		{n: 3, sizes: []int{86, 85, 85}},
		{n: 7, sizes: []int{37, 37, 37, 37, 36, 36, 36}},
		{n: 8, sizes: []int{32, 32, 32, 32, 32, 32, 32, 32}},
		{n: 255}, // one range of 2, then 254 of 1
		{n: 256}, // 256 ranges of 1
	} {
		tb, err := routing.InitialTable(tc.n)
		if err != nil {
			t.Fatalf("InitialTable(%d): %v", tc.n, err)
		}
		if tb.Revision() != 1 {
			t.Errorf("n=%d: revision %d, want 1", tc.n, tb.Revision())
		}
		gs := tb.Groups()
		// Every slot mapped to a group in 1..n, groups non-decreasing over
		// the slots (=> each group's slots are one contiguous range).
		for s, g := range gs {
			if g < 1 || int(g) > tc.n {
				t.Fatalf("n=%d: slot %d -> group %d, want 1..%d", tc.n, s, g, tc.n)
			}
			if s > 0 && g != gs[s-1] && g != gs[s-1]+1 {
				t.Fatalf("n=%d: slot %d -> group %d after slot %d -> group %d: ranges not contiguous/ordered", tc.n, s, g, s-1, gs[s-1])
			}
			if tb.Group(slotstore.HashSlot(s)) != g {
				t.Fatalf("n=%d: Group(%d) = %d, Groups()[%d] = %d", tc.n, s, tb.Group(slotstore.HashSlot(s)), s, g)
			}
		}
		if gs[0] != 1 || int(gs[255]) != tc.n {
			t.Errorf("n=%d: first slot group %d, last slot group %d; want 1 and %d", tc.n, gs[0], gs[255], tc.n)
		}
		var wantIDs []slotstore.GroupID
		for g := 1; g <= tc.n; g++ {
			wantIDs = append(wantIDs, slotstore.GroupID(g))
		}
		if got := tb.GroupIDs(); !slices.Equal(got, wantIDs) {
			t.Errorf("n=%d: GroupIDs() = %v, want 1..%d", tc.n, got, tc.n)
		}
		want := tc.sizes
		if want == nil {
			for g := range tc.n {
				sz := 256 / tc.n
				if g < 256%tc.n {
					sz++
				}
				want = append(want, sz)
			}
		}
		minSz, maxSz, total, next := 1<<30, 0, 0, 0
		for g := 1; g <= tc.n; g++ {
			slots := tb.SlotsOf(slotstore.GroupID(g))
			if len(slots) != want[g-1] {
				t.Errorf("n=%d: group %d owns %d slots, want %d", tc.n, g, len(slots), want[g-1])
			}
			for i, s := range slots {
				if int(s) != next+i {
					t.Fatalf("n=%d: group %d slots %v not the contiguous range starting at %d", tc.n, g, slots, next)
				}
			}
			next += len(slots)
			total += len(slots)
			minSz, maxSz = min(minSz, len(slots)), max(maxSz, len(slots))
		}
		if total != slotstore.HashSlotCount {
			t.Errorf("n=%d: groups own %d slots in total, want 256", tc.n, total)
		}
		if maxSz-minSz > 1 {
			t.Errorf("n=%d: range sizes %d..%d differ by more than one", tc.n, minSz, maxSz)
		}
	}
}

func TestInitialTableRejectsOutOfRange(t *testing.T) {
	for _, n := range []int{-1, 0, 257, 1 << 20} {
		if tb, err := routing.InitialTable(n); err == nil {
			t.Errorf("InitialTable(%d) = %v, want an error", n, tb)
		}
	}
}

func TestNewTable(t *testing.T) {
	gs := rotatedGroups(5, 3)
	tb := mustTable(t, 42, gs)
	if tb.Revision() != 42 || tb.Groups() != gs {
		t.Fatalf("NewTable(42, …) = rev %d groups %v", tb.Revision(), tb.Groups())
	}
	if tb.Group(256) != 0 || tb.Group(0xFFFF) != 0 {
		t.Errorf("Group of an invalid hash slot must be 0, got %d / %d", tb.Group(256), tb.Group(0xFFFF))
	}
	if got := tb.SlotsOf(99); got != nil {
		t.Errorf("SlotsOf(unknown group) = %v, want none", got)
	}
	// GroupIDs sorts even when the first slots belong to high groups.
	if got, want := tb.GroupIDs(), []slotstore.GroupID{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("GroupIDs() = %v, want %v", got, want)
	}

	if _, err := routing.NewTable(0, gs); err == nil {
		t.Error("NewTable accepted revision 0")
	}
	for _, s := range []int{0, 1, 128, 255} {
		bad := gs
		bad[s] = 0
		if _, err := routing.NewTable(7, bad); err == nil {
			t.Errorf("NewTable accepted group 0 at hash slot %d", s)
		}
	}
}

func TestTableMarshalRoundTrip(t *testing.T) {
	init8, _ := routing.InitialTable(8)
	for _, tb := range []*routing.Table{
		init8,
		mustTable(t, 1<<63+5, rotatedGroups(256, 17)),
		mustTable(t, 3, func() (gs [256]slotstore.GroupID) {
			for s := range gs {
				gs[s] = slotstore.GroupID(0xFFFFFFFF - uint32(s))
			}
			return gs
		}()),
	} {
		b, err := tb.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 1+8+4*256 {
			t.Fatalf("encoding has %d bytes, want %d", len(b), 1+8+4*256)
		}
		// Pin the documented layout: version | revision BE | 256 × group BE.
		if b[0] != 1 || binary.BigEndian.Uint64(b[1:]) != tb.Revision() {
			t.Fatalf("header = % x, want version 1 and revision %d", b[:9], tb.Revision())
		}
		for s := range 256 {
			if g := binary.BigEndian.Uint32(b[9+4*s:]); g != uint32(tb.Group(slotstore.HashSlot(s))) {
				t.Fatalf("slot %d encoded as group %d, want %d", s, g, tb.Group(slotstore.HashSlot(s)))
			}
		}
		got, err := routing.UnmarshalTable(b)
		if err != nil {
			t.Fatalf("UnmarshalTable: %v", err)
		}
		if got.Revision() != tb.Revision() || got.Groups() != tb.Groups() {
			t.Errorf("round trip changed the table: rev %d→%d", tb.Revision(), got.Revision())
		}
		b2, _ := got.MarshalBinary()
		if !bytes.Equal(b, b2) {
			t.Error("re-encoding differs")
		}
	}
}

func TestUnmarshalTableRejects(t *testing.T) {
	tb, _ := routing.InitialTable(3)
	good, _ := tb.MarshalBinary()
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for name, b := range map[string][]byte{
		"nil":            nil,
		"empty":          {},
		"version only":   {1},
		"one short":      good[:len(good)-1],
		"one long":       append(bytes.Clone(good), 0),
		"double":         append(bytes.Clone(good), good...),
		"version 0":      mod(func(b []byte) []byte { b[0] = 0; return b }),
		"version 2":      mod(func(b []byte) []byte { b[0] = 2; return b }),
		"revision 0":     mod(func(b []byte) []byte { clear(b[1:9]); return b }),
		"group 0 first":  mod(func(b []byte) []byte { clear(b[9:13]); return b }),
		"group 0 middle": mod(func(b []byte) []byte { clear(b[9+4*100 : 9+4*101]); return b }),
		"group 0 last":   mod(func(b []byte) []byte { clear(b[len(b)-4:]); return b }),
	} {
		if got, err := routing.UnmarshalTable(b); err == nil {
			t.Errorf("%s: UnmarshalTable accepted it (revision %d)", name, got.Revision())
		}
	}
}
