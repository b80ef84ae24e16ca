package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrMalformed is wrapped by every decoding failure.
var ErrMalformed = errors.New("meta: malformed encoding")

// Limits every decoder enforces, so a corrupt or hostile input can never make
// it allocate much or loop long.
const (
	MaxKeyBytes            = 512      // a route key, uid, business key
	MaxValueBytes          = 64 << 10 // a business value
	MaxStringBytes         = 64 << 10 // any other string field
	MaxCommandsPerEntry    = 4096     // commands coalesced into one Raft entry
	MaxEntryBytes          = 8 << 20  // one Raft entry
	MaxIdempotencyKeyBytes = 256
)

// encoder appends the primitives of the codec to a byte slice.
type encoder struct{ b []byte }

func (e *encoder) u8(v uint8)       { e.b = append(e.b, v) }
func (e *encoder) u16(v uint16)     { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *encoder) bytes(v []byte) { e.uvarint(uint64(len(v))); e.b = append(e.b, v...) }
func (e *encoder) str(v string)   { e.uvarint(uint64(len(v))); e.b = append(e.b, v...) }

// decoder reads the primitives back. The first failure sticks: later reads
// return zero values and err() reports the first problem.
type decoder struct {
	b   []byte
	e   error
	off int
}

func (d *decoder) fail(format string, args ...any) {
	if d.e == nil {
		d.e = fmt.Errorf("%w: at byte %d: %s", ErrMalformed, d.off, fmt.Sprintf(format, args...))
	}
	d.b = nil
}

func (d *decoder) err() error { return d.e }

func (d *decoder) done() bool { return d.e != nil || len(d.b) == 0 }

func (d *decoder) take(n int) []byte {
	if d.e != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail("need %d bytes, have %d", n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	d.off += n
	return v
}

func (d *decoder) u8() uint8 {
	v := d.take(1)
	if v == nil {
		return 0
	}
	return v[0]
}

func (d *decoder) u16() uint16 {
	v := d.take(2)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint16(v)
}

func (d *decoder) uvarint() uint64 {
	if d.e != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	if d.e != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	d.off += n
	return v
}

func (d *decoder) bool() bool {
	switch d.u8() {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("bad bool")
		return false
	}
}

// length reads a length prefix and checks it against max and the bytes left.
func (d *decoder) length(max int) int {
	n := d.uvarint()
	if d.e != nil {
		return 0
	}
	if n > uint64(max) || n > math.MaxInt32 {
		d.fail("length %d over limit %d", n, max)
		return 0
	}
	if int(n) > len(d.b) {
		d.fail("length %d past end (%d left)", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) bytes(max int) []byte {
	n := d.length(max)
	v := d.take(n)
	if v == nil {
		return nil
	}
	return append([]byte(nil), v...)
}

func (d *decoder) str(max int) string { return string(d.take(d.length(max))) }
