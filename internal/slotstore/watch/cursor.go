package watch

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Cursor is a watcher's position: the hash slots it covers and, for each,
// the sequence of the last change given to it (0: none yet). Its text form
// (String, ParseCursor) is what a client holds — the SSE id — and is opaque
// to it.
type Cursor struct {
	covers [slotstore.HashSlotCount]bool
	seq    [slotstore.HashSlotCount]uint64
}

// cursorVersion is the first byte of every encoded cursor.
const cursorVersion = 1

// MaxCursorText bounds a cursor's text form: 256 slots at the largest
// sequences fit well within it.
const MaxCursorText = 6 << 10

// ErrBadCursor is what ParseCursor answers for text that is not a cursor.
var ErrBadCursor = errors.New("watch: not a cursor")

// NewCursor returns a cursor over slots, each at sequence 0 (before its
// first retained change: a watch from there reads the whole log).
func NewCursor(slots ...slotstore.HashSlot) Cursor {
	var c Cursor
	for _, s := range slots {
		if s.Valid() {
			c.covers[s] = true
		}
	}
	return c
}

// Covers reports whether the cursor holds a position for s.
func (c *Cursor) Covers(s slotstore.HashSlot) bool { return s.Valid() && c.covers[s] }

// Slots lists the slots the cursor covers, in order.
func (c *Cursor) Slots() []slotstore.HashSlot {
	var out []slotstore.HashSlot
	for s, ok := range c.covers {
		if ok {
			out = append(out, slotstore.HashSlot(s))
		}
	}
	return out
}

// Seq is the position of s (0 for a slot not covered).
func (c *Cursor) Seq(s slotstore.HashSlot) uint64 {
	if !c.Covers(s) {
		return 0
	}
	return c.seq[s]
}

// Set moves the position of s, which the cursor must cover.
func (c *Cursor) Set(s slotstore.HashSlot, seq uint64) {
	if c.Covers(s) {
		c.seq[s] = seq
	}
}

// String encodes the cursor: a version byte, then for each covered slot in
// order the gap from the previous one and its sequence (uvarints), in
// unpadded URL-safe base64.
func (c *Cursor) String() string {
	b := make([]byte, 1, 1+4*slotstore.HashSlotCount)
	b[0] = cursorVersion
	next := 0
	for _, s := range c.Slots() {
		b = binary.AppendUvarint(b, uint64(int(s)-next))
		b = binary.AppendUvarint(b, c.seq[s])
		next = int(s) + 1
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor decodes a cursor's text form; anything else is ErrBadCursor
// with the reason.
func ParseCursor(text string) (Cursor, error) {
	var c Cursor
	if len(text) == 0 || len(text) > MaxCursorText {
		return c, fmt.Errorf("%w: %d characters (1 to %d)", ErrBadCursor, len(text), MaxCursorText)
	}
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrBadCursor, err)
	}
	if len(b) == 0 { // base64 skips line breaks: "\r" decodes to nothing
		return c, fmt.Errorf("%w: no bytes", ErrBadCursor)
	}
	if b[0] != cursorVersion {
		return c, fmt.Errorf("%w: version %d", ErrBadCursor, b[0])
	}
	b = b[1:]
	next := uint64(0)
	for len(b) > 0 {
		gap, n := binary.Uvarint(b)
		if n <= 0 {
			return Cursor{}, fmt.Errorf("%w: bad slot", ErrBadCursor)
		}
		b = b[n:]
		seq, n := binary.Uvarint(b)
		if n <= 0 {
			return Cursor{}, fmt.Errorf("%w: bad sequence", ErrBadCursor)
		}
		b = b[n:]
		if gap >= slotstore.HashSlotCount-next {
			return Cursor{}, fmt.Errorf("%w: slot past %d", ErrBadCursor, slotstore.HashSlotCount-1)
		}
		s := slotstore.HashSlot(next + gap)
		c.covers[s] = true
		c.seq[s] = seq
		next = uint64(s) + 1
	}
	return c, nil
}
