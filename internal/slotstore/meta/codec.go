package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// ErrMalformed is wrapped by every decoding failure.
var ErrMalformed = errors.New("meta: malformed encoding")

// ErrLimit is wrapped by every encoding failure: a field over a codec limit
// (or outside what its decoder accepts), which every replica would refuse.
var ErrLimit = errors.New("meta: over a codec limit")

// Limits every decoder enforces, so a corrupt or hostile input can never make
// it allocate much or loop long. The encoder checks the same limits (one walk
// serves both directions), so what encodes decodes.
const (
	MaxKeyBytes            = 512      // a route key, uid, business key
	MaxValueBytes          = 64 << 10 // a business value
	MaxStringBytes         = 64 << 10 // any other string field
	MaxCommandsPerEntry    = 4096     // commands coalesced into one Raft entry
	MaxEntryBytes          = 8 << 20  // one Raft entry
	MaxIdempotencyKeyBytes = 256
)

// coder walks a value's fields in wire order in one direction: encoding
// appends each field to b, decoding reads it from b into the field. Every
// type has one walk (a code method), so its two directions cannot drift
// apart, and every limit or check in a walk holds for both: a value the
// encoder accepts is one the decoder accepts.
//
// The first failure sticks and err reports it. Decoding stops there (later
// reads leave their fields alone); encoding goes on writing, so the bytes
// of a value are the same whether or not the caller heeds the error.
//
// A command's coder escapes to the heap (its walk is an interface method),
// so it is kept as small as a decoder without a direction flag: off < 0
// means encoding.
type coder struct {
	b   []byte // encoding: the output so far; decoding: the input not yet read
	err error
	off int // decoding: bytes read so far, for error messages; encoding: -1
}

func encoding(capacity int) coder { return coder{b: make([]byte, 0, capacity), off: -1} }
func decoding(b []byte) coder     { return coder{b: b} }

// dec reports the direction: true decodes.
func (c *coder) dec() bool { return c.off >= 0 }

// walker is a type with a walk: entities, pages, and the parts they share.
type walker interface{ code(*coder) }

func (c *coder) fail(format string, args ...any) {
	if c.err == nil {
		if c.dec() {
			c.err = fmt.Errorf("%w: at byte %d: %s", ErrMalformed, c.off, fmt.Sprintf(format, args...))
		} else {
			c.err = fmt.Errorf("%w: %s", ErrLimit, fmt.Sprintf(format, args...))
		}
	}
	if c.dec() {
		c.b = nil
	}
}

// more reports whether a field appended to a layout later is there: always
// when encoding, when bytes are left when decoding (rows written before the
// field existed end before it).
func (c *coder) more() bool { return !c.dec() || (c.err == nil && len(c.b) > 0) }

func (c *coder) take(n int) []byte {
	if c.err != nil {
		return nil
	}
	if n < 0 || n > len(c.b) {
		c.fail("need %d bytes, have %d", n, len(c.b))
		return nil
	}
	v := c.b[:n:n]
	c.b = c.b[n:]
	c.off += n
	return v
}

// The primitives keep the encoding side small enough to inline into every
// walk (it is all an encoder does) and decode out of line.

func (c *coder) u8(p *uint8) {
	if c.off < 0 {
		c.b = append(c.b, *p)
	} else if v := c.take(1); v != nil {
		*p = v[0]
	}
}

func (c *coder) u16(p *uint16) {
	if c.off < 0 {
		c.b = binary.BigEndian.AppendUint16(c.b, *p)
	} else if v := c.take(2); v != nil {
		*p = binary.BigEndian.Uint16(v)
	}
}

func (c *coder) uvarint(p *uint64) {
	if c.off < 0 {
		c.b = binary.AppendUvarint(c.b, *p)
	} else {
		c.readUvarint(p)
	}
}

func (c *coder) readUvarint(p *uint64) {
	if c.err != nil {
		return
	}
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.fail("bad uvarint")
		return
	}
	c.b = c.b[n:]
	c.off += n
	*p = v
}

// varint codes a signed integer zigzag-encoded as a uvarint, which is what
// binary.AppendVarint writes and binary.Varint reads.
func (c *coder) varint(p *int64) {
	if c.off < 0 {
		c.b = binary.AppendVarint(c.b, *p)
		return
	}
	var ux uint64
	c.readUvarint(&ux)
	if c.err == nil {
		x := int64(ux >> 1)
		if ux&1 != 0 {
			x = ^x
		}
		*p = x
	}
}

func (c *coder) bool(p *bool) {
	if c.off >= 0 {
		c.readBool(p)
	} else if *p {
		c.b = append(c.b, 1)
	} else {
		c.b = append(c.b, 0)
	}
}

func (c *coder) readBool(p *bool) {
	switch v := c.take(1); {
	case v == nil:
	case v[0] <= 1:
		*p = v[0] == 1
	default:
		c.fail("bad bool")
	}
}

// readLength reads a length prefix and checks it against max and the bytes
// left.
func (c *coder) readLength(max int, what string) int {
	var l uint64
	c.readUvarint(&l)
	if c.err != nil {
		return 0
	}
	if l > uint64(max) || l > math.MaxInt32 {
		c.fail("%s: length %d over limit %d", what, l, max)
		return 0
	}
	if int(l) > len(c.b) {
		c.fail("%s: length %d past end (%d left)", what, l, len(c.b))
		return 0
	}
	return int(l)
}

// bytes codes a length-prefixed byte string of at most max bytes. A decoded
// one owns its memory; an empty one decodes as nil.
func (c *coder) bytes(p *[]byte, max int, what string) {
	if c.off >= 0 {
		if v := c.take(c.readLength(max, what)); v != nil {
			*p = append([]byte(nil), v...)
		}
		return
	}
	if len(*p) > max {
		c.over(len(*p), max, what)
	}
	c.b = append(binary.AppendUvarint(c.b, uint64(len(*p))), *p...)
}

// str codes a length-prefixed string of at most max bytes.
func (c *coder) str(p *string, max int, what string) {
	if c.off >= 0 {
		c.readStr(p, max, what)
		return
	}
	if len(*p) > max {
		c.over(len(*p), max, what)
	}
	c.b = append(binary.AppendUvarint(c.b, uint64(len(*p))), *p...)
}

func (c *coder) readStr(p *string, max int, what string) {
	if v := c.take(c.readLength(max, what)); v != nil {
		*p = string(v)
	}
}

// over fails an encoding for a field of n bytes over its limit, as the
// decoder would fail it.
func (c *coder) over(n, max int, what string) { c.fail("%s: length %d over limit %d", what, n, max) }

// slot codes a hash slot (two bytes; its range is checked by the caller,
// which knows which slot routes).
func (c *coder) slot(p *slotstore.HashSlot) { c.u16((*uint16)(p)) }

// limit codes a page size or byte budget: a negative one travels as 0, and
// one over max fails.
func (c *coder) limit(p *int, max uint64, what string) {
	v := uint64(0)
	if !c.dec() {
		v = uint64(*p)
		if *p < 0 {
			v = 0
		}
	}
	c.uvarint(&v)
	if v > max {
		c.fail("%s %d over limit %d", what, v, max)
		return
	}
	if c.dec() {
		*p = int(v)
	}
}

// uvarint32 codes a uint32 as a uvarint.
func (c *coder) uvarint32(p *uint32, what string) {
	v := uint64(*p)
	c.uvarint(&v)
	if v > math.MaxUint32 {
		c.fail("%s %d past 32 bits", what, v)
	} else if c.dec() {
		*p = uint32(v)
	}
}

// count codes an int the encoder writes as the uvarint of its bits (a
// count, never negative in practice).
func (c *coder) count(p *int) {
	v := uint64(*p)
	c.uvarint(&v)
	if c.dec() {
		*p = int(v)
	}
}

// version codes a layout's version byte; decoding fails on another one.
func (c *coder) version(want uint8, what string) {
	v := want
	c.u8(&v)
	if v != want && c.err == nil {
		c.fail("unknown %s version %d", what, v)
	}
}

// nested codes w as a length-prefixed value of at most max bytes, which is
// how a stored entity travels inside an answer: decoding walks w over
// exactly those bytes, so bytes a newer writer appended to it are skipped.
func (c *coder) nested(w walker, max int, what string) {
	if !c.dec() {
		sub := encoding(64)
		w.code(&sub)
		if sub.err != nil && c.err == nil {
			c.err = sub.err
		}
		c.bytes(&sub.b, max, what)
		return
	}
	sub := decoding(c.take(c.readLength(max, what)))
	if c.err != nil {
		return
	}
	w.code(&sub)
	if sub.err != nil && c.err == nil {
		c.err, c.b = sub.err, nil
	}
}
