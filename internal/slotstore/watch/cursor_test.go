package watch

import (
	"errors"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func TestCursorRoundTrip(t *testing.T) {
	all := make([]slotstore.HashSlot, slotstore.HashSlotCount)
	for i := range all {
		all[i] = slotstore.HashSlot(i)
	}
	for _, slots := range [][]slotstore.HashSlot{{0}, {255}, {3, 9, 200}, all} {
		c := NewCursor(slots...)
		for i, s := range slots {
			c.Set(s, uint64(i)*1_000_003+uint64(s))
		}
		c.Set(slots[0], ^uint64(0))
		text := c.String()
		if len(text) > MaxCursorText {
			t.Fatalf("%d slots: %d characters, over %d", len(slots), len(text), MaxCursorText)
		}
		back, err := ParseCursor(text)
		if err != nil {
			t.Fatalf("%d slots: %v", len(slots), err)
		}
		if back != c {
			t.Fatalf("%d slots: round trip changed the cursor", len(slots))
		}
	}
	c := NewCursor(4)
	if c.Seq(5) != 0 || c.Covers(5) {
		t.Fatal("an uncovered slot has a position")
	}
	c.Set(5, 9)
	if c.Covers(5) {
		t.Fatal("Set covered a slot")
	}
}

func TestParseCursorRefuses(t *testing.T) {
	for name, text := range map[string]string{
		"empty":       "",
		"not base64":  "!!!",
		"version":     "Ag",     // 0x02
		"slot past":   "AYACAQ", // gap 256
		"cut varint":  "AYA",    // 0x01 0x80
		"too long":    strings.Repeat("A", MaxCursorText+1),
		"second slot": "AQAB_wEA", // 0, 1, then gap 255 from 1
	} {
		if _, err := ParseCursor(text); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%s: %v, want ErrBadCursor", name, err)
		}
	}
}

// FuzzParseCursor: any text parses to a cursor that encodes back to text
// parsing to the same cursor, or is refused; never a panic.
func FuzzParseCursor(f *testing.F) {
	c := NewCursor(1, 2, 255)
	c.Set(2, 77)
	f.Add(c.String())
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseCursor(text)
		if err != nil {
			return
		}
		back, err := ParseCursor(c.String())
		if err != nil || back != c {
			t.Fatalf("re-encoded cursor differs: %v", err)
		}
	})
}
