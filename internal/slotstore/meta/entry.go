package meta

import (
	"fmt"

	"slotmeta/internal/slotstore"
)

// entryVersion is the first byte of a Raft entry's payload.
const entryVersion = 1

// EncodeEntry frames already-encoded commands into one Raft entry payload:
// version | count | count × (length | command).
func EncodeEntry(cmds [][]byte) []byte {
	n := 1 + 5
	for _, c := range cmds {
		n += 5 + len(c)
	}
	e := encoder{b: make([]byte, 0, n)}
	e.u8(entryVersion)
	e.uvarint(uint64(len(cmds)))
	for _, c := range cmds {
		e.bytes(c)
	}
	return e.b
}

// DecodeEntry splits an entry payload into its encoded commands. The returned
// slices alias data.
func DecodeEntry(data []byte) ([][]byte, error) {
	d := decoder{b: data}
	if v := d.u8(); d.err() == nil && v != entryVersion {
		return nil, fmt.Errorf("%w: unknown entry version %d", ErrMalformed, v)
	}
	n := d.uvarint()
	if d.err() == nil && (n == 0 || n > MaxCommandsPerEntry) {
		d.fail("entry holds %d commands", n)
	}
	if d.err() != nil {
		return nil, d.err()
	}
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		out = append(out, d.take(d.length(MaxEntryBytes)))
	}
	if d.err() != nil {
		return nil, d.err()
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after entry", ErrMalformed, len(d.b))
	}
	return out, nil
}

// Result is the outcome of one applied command.
type Result struct {
	Code     slotstore.Code // empty on success
	Message  string
	Revision uint64 // the group revision the command wrote (or found, on failure)
	Value    []byte // the encoded entity the command wrote or found, if any
	Replayed bool   // answered from an idempotency record, not applied again
}

// OK reports whether the command succeeded.
func (r *Result) OK() bool { return r.Code == "" }

// Err returns the result as an error, or nil on success.
func (r *Result) Err() error {
	if r.OK() {
		return nil
	}
	return &slotstore.Error{Code: r.Code, Message: r.Message}
}

const resultVersion = 1

func encodeResult(e *encoder, r *Result) {
	e.str(string(r.Code))
	e.str(r.Message)
	e.uvarint(r.Revision)
	e.bytes(r.Value)
	e.bool(r.Replayed)
}

func decodeResult(d *decoder) Result {
	return Result{
		Code:     slotstore.Code(d.str(64)),
		Message:  d.str(MaxStringBytes),
		Revision: d.uvarint(),
		Value:    d.bytes(MaxEntryBytes),
		Replayed: d.bool(),
	}
}

// EncodeResult encodes one result (for idempotency records).
func EncodeResult(r *Result) []byte {
	e := encoder{}
	e.u8(resultVersion)
	encodeResult(&e, r)
	return e.b
}

// DecodeResult decodes EncodeResult's output.
func DecodeResult(b []byte) (Result, error) {
	d := decoder{b: b}
	if v := d.u8(); d.err() == nil && v != resultVersion {
		return Result{}, fmt.Errorf("%w: unknown result version %d", ErrMalformed, v)
	}
	r := decodeResult(&d)
	return r, d.err()
}

// EncodeResults encodes the results of one entry, in command order.
func EncodeResults(rs []Result) []byte {
	e := encoder{}
	e.u8(resultVersion)
	e.uvarint(uint64(len(rs)))
	for i := range rs {
		encodeResult(&e, &rs[i])
	}
	return e.b
}

// DecodeResults decodes EncodeResults's output.
func DecodeResults(b []byte) ([]Result, error) {
	d := decoder{b: b}
	if v := d.u8(); d.err() == nil && v != resultVersion {
		return nil, fmt.Errorf("%w: unknown result version %d", ErrMalformed, v)
	}
	n := d.uvarint()
	if d.err() == nil && n > MaxCommandsPerEntry {
		d.fail("%d results", n)
	}
	if d.err() != nil {
		return nil, d.err()
	}
	out := make([]Result, 0, min(n, uint64(len(d.b))/5)) // a result takes at least 5 bytes
	for i := uint64(0); i < n && d.err() == nil; i++ {
		out = append(out, decodeResult(&d))
	}
	return out, d.err()
}
