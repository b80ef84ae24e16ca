package routing_test

import (
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// bitwiseCRC32 is CRC-32/IEEE (reflected polynomial 0xEDB88320, init and
// final xor 0xFFFFFFFF) computed one bit at a time. It shares no code with
// hash/crc32, so it is an independent oracle for slotstore.HashSlotOf.
func bitwiseCRC32(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xEDB88320
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

// TestBitwiseCRC32KnownValues pins the oracle itself to published values
// (computed independently with Python's zlib.crc32), so a broken oracle
// cannot agree with a broken implementation.
func TestBitwiseCRC32KnownValues(t *testing.T) {
	for _, tc := range []struct {
		key  string
		crc  uint32
		slot slotstore.HashSlot
	}{
		{"", 0x00000000, 0},
		{"a", 0xE8B7BE43, 67},
		{"user-1", 0x7E264614, 20},
		{"channel:42", 0xB1F47FB9, 185},
		{"123456789", 0xCBF43926, 38}, // the CRC-32 "check" value
		{"The quick brown fox jumps over the lazy dog", 0x414FA339, 57},
		{"\x00", 0xD202EF8D, 141},
		{"\xff\xff\xff\xff", 0xFFFFFFFF, 255},
	} {
		if got := bitwiseCRC32([]byte(tc.key)); got != tc.crc {
			t.Errorf("bitwiseCRC32(%q) = %#08x, want %#08x", tc.key, got, tc.crc)
		}
		if got := slotstore.HashSlotOf([]byte(tc.key)); got != tc.slot {
			t.Errorf("HashSlotOf(%q) = %d, want %d", tc.key, got, tc.slot)
		}
		if got := slotstore.HashSlotOfString(tc.key); got != tc.slot {
			t.Errorf("HashSlotOfString(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
}

func TestHashSlotOfMatchesIndependentCRC32(t *testing.T) {
	var keys [][]byte
	for i := range 2000 {
		keys = append(keys, fmt.Appendf(nil, "user-%d", i), fmt.Appendf(nil, "channel:%d", i))
	}
	// Every byte value and a few lengths around the 8/16/64-byte strides
	// accelerated CRC implementations use.
	for n := range 130 {
		k := make([]byte, n)
		for i := range k {
			k[i] = byte(i*31 + n)
		}
		keys = append(keys, k)
	}
	hit := map[slotstore.HashSlot]bool{}
	for _, k := range keys {
		want := slotstore.HashSlot(bitwiseCRC32(k) % 256)
		got := slotstore.HashSlotOf(k)
		if got != want {
			t.Fatalf("HashSlotOf(%q) = %d, want %d", k, got, want)
		}
		if !got.Valid() {
			t.Fatalf("HashSlotOf(%q) = %d is not a valid hash slot", k, got)
		}
		if s := slotstore.HashSlotOfString(string(k)); s != want {
			t.Fatalf("HashSlotOfString(%q) = %d, want %d", k, s, want)
		}
		hit[got] = true
	}
	// 4000+ keys spread over all 256 slots; a hash that ignores part of the
	// key or truncates would leave most of them empty.
	if len(hit) != slotstore.HashSlotCount {
		t.Errorf("keys hit %d distinct hash slots, want all %d", len(hit), slotstore.HashSlotCount)
	}
}
