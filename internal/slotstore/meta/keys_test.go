package meta_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func TestKeyLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want []byte
	}{
		{"GroupPrefix", meta.GroupPrefix(0x01020304), []byte{1, 2, 3, 4}},
		{"GroupPrefix max", meta.GroupPrefix(math.MaxUint32), []byte{0xFF, 0xFF, 0xFF, 0xFF}},
		{"SlotPrefix", meta.SlotPrefix(1, 0xFF), []byte{0, 0, 0, 1, 0, 0xFF}},
		{"TablePrefix", meta.TablePrefix(1, 2, meta.TableKV), []byte{0, 0, 0, 1, 0, 2, 0, 2}},
		{"RowKey", meta.RowKey(1, 2, meta.TableKV, "k\x00"), []byte{0, 0, 0, 1, 0, 2, 0, 2, 'k', 0}},
		{"UserKey", meta.UserKey(8, 255, "u"), []byte{0, 0, 0, 8, 0, 255, 0, 1, 'u'}},
		{"KVKey", meta.KVKey(8, 0, ""), []byte{0, 0, 0, 8, 0, 0, 0, 2}},
		{"DedupKey", meta.DedupKey(8, 1, "id"), []byte{0, 0, 0, 8, 0, 1, 0, 3, 'i', 'd'}},
		{"SysKey", meta.SysKey(1, meta.SysApplied), []byte{0, 0, 0, 1, 0xFF, 0xFF, 0, 1}},
		{"SysKey owned", meta.SysKey(2, meta.SysOwned), []byte{0, 0, 0, 2, 0xFF, 0xFF, 0, 2}},
		{"SysKey format", meta.SysKey(0, meta.SysFormatVersion), []byte{0, 0, 0, 0, 0xFF, 0xFF, 1, 0}},
		{"DedupLogKey", meta.DedupLogKey(3, 0x0102), []byte{0, 0, 0, 3, 0xFF, 0xFF, 0, 5, 0, 0, 0, 0, 0, 0, 1, 2}},
	} {
		if !bytes.Equal(tc.got, tc.want) {
			t.Errorf("%s = % x, want % x", tc.name, tc.got, tc.want)
		}
	}
}

// Keys are built into fresh buffers: appending to one never changes another.
func TestKeysDoNotShareBuffers(t *testing.T) {
	p := meta.SlotPrefix(1, 2)
	k1 := meta.RowKey(1, 2, meta.TableUser, "a")
	_ = append(p, 0xEE, 0xEE, 0xEE)
	if !bytes.Equal(k1, []byte{0, 0, 0, 1, 0, 2, 0, 1, 'a'}) {
		t.Fatalf("RowKey changed by an append to SlotPrefix: % x", k1)
	}
	a := meta.DedupLogKey(1, 1)
	b := meta.DedupLogKey(1, 2)
	if bytes.Equal(a, b) {
		t.Fatal("DedupLogKey(1) and DedupLogKey(2) share a buffer")
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		in, want []byte
	}{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xFF}, []byte{2}},
		{[]byte{1, 0xFF, 0xFF}, []byte{2}},
		{[]byte{0, 0, 0, 1, 0xFF, 0xFF}, []byte{0, 0, 0, 2}},
		{[]byte{0xFE, 0xFF}, []byte{0xFF}},
		{[]byte{0xFF}, nil},
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF}, nil},
		{[]byte{}, nil},
		{nil, nil},
	} {
		in := bytes.Clone(tc.in)
		got := meta.PrefixEnd(in)
		if !bytes.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("PrefixEnd(% x) = % x (nil=%v), want % x", tc.in, got, got == nil, tc.want)
		}
		if !bytes.Equal(in, tc.in) {
			t.Errorf("PrefixEnd modified its input: % x -> % x", tc.in, in)
		}
	}
	// The end is strictly greater than every extension of the prefix, and
	// no key between prefix and end lacks the prefix.
	p := []byte{0, 7, 0xFF}
	end := meta.PrefixEnd(p)
	for _, k := range [][]byte{p, cat(p, []byte{0}), cat(p, bytes.Repeat([]byte{0xFF}, 40))} {
		if bytes.Compare(k, end) >= 0 {
			t.Errorf("% x is not below PrefixEnd % x", k, end)
		}
	}
	if !bytes.Equal(end, []byte{0, 8}) {
		t.Errorf("PrefixEnd(% x) = % x", p, end)
	}
}

func TestSplitRowKey(t *testing.T) {
	for _, tc := range []struct {
		g  slotstore.GroupID
		s  slotstore.HashSlot
		tb meta.Table
		pk string
	}{
		{1, 0, meta.TableUser, "user-1"},
		{math.MaxUint32, 255, meta.TableKV, "\x00\xff\xff"},
		{0, 128, meta.TableDedup, ""},
		{42, 17, meta.TableKV, "用户"},
	} {
		g, s, tb, pk, ok := meta.SplitRowKey(meta.RowKey(tc.g, tc.s, tc.tb, tc.pk))
		if !ok || g != tc.g || s != tc.s || tb != tc.tb || string(pk) != tc.pk {
			t.Errorf("SplitRowKey(RowKey(%d,%d,%d,%q)) = %d,%d,%d,%q,%v", tc.g, tc.s, tc.tb, tc.pk, g, s, tb, pk, ok)
		}
	}
	for name, k := range map[string][]byte{
		"sys":          meta.SysKey(1, meta.SysApplied),
		"dedup log":    meta.DedupLogKey(1, 9),
		"format":       meta.SysKey(0, meta.SysFormatVersion),
		"group prefix": meta.GroupPrefix(1),
		"slot prefix":  meta.SlotPrefix(1, 2),
		"7 bytes":      {0, 0, 0, 1, 0, 2, 0},
		"empty":        nil,
	} {
		if _, _, _, _, ok := meta.SplitRowKey(k); ok {
			t.Errorf("SplitRowKey(%s % x) accepted it", name, k)
		}
	}
}

// inRange reports lo <= k < hi, where a nil hi means "no upper bound".
func inRange(k, lo, hi []byte) bool {
	return bytes.Compare(k, lo) >= 0 && (hi == nil || bytes.Compare(k, hi) < 0)
}

// TestKeyOrdering checks the layout's promises on a large set of keys:
// every key of group g sorts inside [GroupPrefix(g), PrefixEnd(GroupPrefix(g))),
// every row of slot s inside its slot prefix range, system keys after every
// hash-slot row of the group, and two groups' ranges never overlap.
func TestKeyOrdering(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	groupIDs := []slotstore.GroupID{0, 1, 2, 255, 256, 0x00FFFFFF, math.MaxUint32 - 1, math.MaxUint32}
	slots := []slotstore.HashSlot{0, 1, 127, 128, 254, 255}
	pks := []string{"", "a", "\x00", "\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\xff", "user-1"}
	for range 5 {
		b := make([]byte, rng.IntN(20))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		pks = append(pks, string(b))
	}
	type key struct {
		k   []byte
		g   slotstore.GroupID
		s   int // hash slot, or 1<<16 for a system key
		sys bool
	}
	var keys []key
	for _, g := range groupIDs {
		gLo := meta.GroupPrefix(g)
		gHi := meta.PrefixEnd(gLo)
		var rows, sys [][]byte
		for _, s := range slots {
			sLo := meta.SlotPrefix(g, s)
			sHi := meta.PrefixEnd(sLo)
			for _, tb := range []meta.Table{meta.TableUser, meta.TableKV, meta.TableDedup, 0xFFFF} {
				for _, pk := range pks {
					k := meta.RowKey(g, s, tb, pk)
					if !inRange(k, sLo, sHi) {
						t.Fatalf("row % x outside its slot range [% x, % x)", k, sLo, sHi)
					}
					rows = append(rows, k)
					keys = append(keys, key{k, g, int(s), false})
				}
			}
		}
		for _, kind := range []meta.SysKind{meta.SysApplied, meta.SysOwned, meta.SysRevision, meta.SysDedupMeta, meta.SysFormatVersion, 0xFFFF} {
			sys = append(sys, meta.SysKey(g, kind))
		}
		for _, seq := range []uint64{0, 1, math.MaxUint64} {
			sys = append(sys, meta.DedupLogKey(g, seq))
		}
		for _, k := range sys {
			keys = append(keys, key{k, g, 1 << 16, true})
		}
		maxRow := slices.MaxFunc(rows, bytes.Compare)
		for _, k := range slices.Concat(rows, sys) {
			if !inRange(k, gLo, gHi) {
				t.Fatalf("key % x of group %d outside [% x, % x)", k, g, gLo, gHi)
			}
		}
		for _, k := range sys {
			if bytes.Compare(k, maxRow) <= 0 {
				t.Fatalf("system key % x of group %d does not sort after row % x", k, g, maxRow)
			}
			if inRange(k, meta.SlotPrefix(g, 255), meta.PrefixEnd(meta.SlotPrefix(g, 255))) {
				t.Fatalf("system key % x inside hash slot 255's range", k)
			}
		}
	}
	// Sorted, the keys come grouped: by group, then hash slot, with system
	// keys last — so prefix scans see exactly one group / one slot.
	slices.SortFunc(keys, func(a, b key) int { return bytes.Compare(a.k, b.k) })
	for i := 1; i < len(keys); i++ {
		a, b := keys[i-1], keys[i]
		if a.g > b.g || (a.g == b.g && a.s > b.s) {
			t.Fatalf("key order mixes groups/slots: (g%d, s%d) % x before (g%d, s%d) % x", a.g, a.s, a.k, b.g, b.s, b.k)
		}
	}
	// Group ranges are disjoint and ordered.
	for i := 1; i < len(groupIDs); i++ {
		prevEnd := meta.PrefixEnd(meta.GroupPrefix(groupIDs[i-1]))
		if prevEnd == nil || bytes.Compare(prevEnd, meta.GroupPrefix(groupIDs[i])) > 0 {
			t.Fatalf("group %d's range ends at % x, past group %d's start", groupIDs[i-1], prevEnd, groupIDs[i])
		}
	}
}

func TestSlotSet(t *testing.T) {
	enc := meta.EncodeSlotSet([]slotstore.HashSlot{255, 8, 0, 7, 8, 256, 0xFFFF})
	want := make([]byte, 32)
	want[0], want[1], want[31] = 0x81, 0x01, 0x80
	if !bytes.Equal(enc, want) {
		t.Fatalf("EncodeSlotSet = % x, want % x", enc, want)
	}
	ss, ok := meta.DecodeSlotSet(enc)
	if !ok {
		t.Fatal("DecodeSlotSet rejected a valid set")
	}
	if got := ss.Slots(); !slices.Equal(got, []slotstore.HashSlot{0, 7, 8, 255}) {
		t.Fatalf("Slots() = %v", got)
	}
	for s, want := range map[slotstore.HashSlot]bool{0: true, 1: false, 7: true, 8: true, 9: false, 254: false, 255: true, 256: false, 0xFFFF: false} {
		if ss.Has(s) != want {
			t.Errorf("Has(%d) = %v, want %v", s, !want, want)
		}
	}
	// Decoding copies: changing the input afterwards does not change the set.
	enc[0] = 0
	if !ss.Has(0) {
		t.Fatal("SlotSet aliases its input")
	}

	var all []slotstore.HashSlot
	for s := range slotstore.HashSlotCount {
		all = append(all, slotstore.HashSlot(s))
	}
	for name, in := range map[string][]slotstore.HashSlot{
		"none":  nil,
		"all":   all,
		"odd":   slices.DeleteFunc(slices.Clone(all), func(s slotstore.HashSlot) bool { return s%2 == 0 }),
		"range": all[86:171],
	} {
		ss, ok := meta.DecodeSlotSet(meta.EncodeSlotSet(in))
		if !ok || !slices.Equal(ss.Slots(), in) {
			t.Errorf("%s: round trip = %v, %v", name, ss.Slots(), ok)
		}
	}
	for _, n := range []int{0, 31, 33, 256} {
		if _, ok := meta.DecodeSlotSet(make([]byte, n)); ok {
			t.Errorf("DecodeSlotSet accepted %d bytes", n)
		}
	}
	// A nil set (a state machine's before Open) is empty, not a panic.
	var none *meta.SlotSet
	if none.Has(0) || !none.Empty() || none.Slots() != nil {
		t.Fatal("a nil SlotSet is not the empty set")
	}
	a, _ := meta.DecodeSlotSet(meta.EncodeSlotSet([]slotstore.HashSlot{1, 8, 200}))
	b, _ := meta.DecodeSlotSet(meta.EncodeSlotSet([]slotstore.HashSlot{8, 9, 200}))
	if got := a.And(&b); !slices.Equal(got.Slots(), []slotstore.HashSlot{8, 200}) {
		t.Fatalf("And = %v", got.Slots())
	}
	if got := a.And(none); !got.Empty() {
		t.Fatalf("And with a nil set = %v", got.Slots())
	}
}

func TestCompositeKeysKeepOrderAndNeverCollide(t *testing.T) {
	// Parts with embedded zero bytes and prefixes of each other must not
	// collide and must sort part by part.
	uids := []string{"a", "a\x00", "a\x00b", "a\x01", "ab", "b"}
	var keys [][]byte
	for _, u := range uids {
		keys = append(keys, meta.DeviceKey(1, 2, u, 0), meta.DeviceKey(1, 2, u, 255))
	}
	for i := 1; i < len(keys); i++ {
		if bytes.Compare(keys[i-1], keys[i]) >= 0 {
			t.Fatalf("keys out of order at %d: %q !< %q", i, keys[i-1], keys[i])
		}
	}
	for _, u := range uids {
		p := meta.DevicePrefix(1, 2, u)
		for _, other := range uids {
			k := meta.DeviceKey(1, 2, other, 7)
			if bytes.HasPrefix(k, p) != (other == u) {
				t.Fatalf("device of %q under the prefix of %q: %v", other, u, bytes.HasPrefix(k, p))
			}
		}
	}
	a := meta.ChannelMemberKey(1, 2, meta.TableSubscriber, 1, "g1", "u")
	b := meta.ChannelMemberKey(1, 2, meta.TableSubscriber, 1, "g1\x00", "u")
	c := meta.ChannelMemberKey(1, 2, meta.TableSubscriber, 2, "g1", "u")
	if bytes.Equal(a, b) || bytes.Equal(a, c) || !bytes.HasPrefix(a, meta.ChannelListPrefix(1, 2, meta.TableSubscriber, 1, "g1")) ||
		bytes.HasPrefix(b, meta.ChannelListPrefix(1, 2, meta.TableSubscriber, 1, "g1")) {
		t.Fatal("channel list keys collide or leak across channels")
	}
	newer := meta.MembershipActivityKey(1, 2, "u", 2000, 1, "x")
	older := meta.MembershipActivityKey(1, 2, "u", 1000, 1, "y")
	if bytes.Compare(newer, older) >= 0 {
		t.Fatal("activity index does not list newest first")
	}
}
