package meta

import (
	"encoding/binary"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// entryVersion is the first byte of a Raft entry's payload.
const entryVersion = 1

// EncodeEntry frames already-encoded commands into one Raft entry payload:
// version | count | count × (length | command). Framing is not a walk:
// the commands are bytes already, and DecodeEntry hands them back without
// copying them.
func EncodeEntry(cmds [][]byte) []byte {
	n := 1 + 5
	for _, c := range cmds {
		n += 5 + len(c)
	}
	c := encoding(n)
	c.b = append(c.b, entryVersion)
	c.b = binary.AppendUvarint(c.b, uint64(len(cmds)))
	for _, cmd := range cmds {
		c.b = append(binary.AppendUvarint(c.b, uint64(len(cmd))), cmd...)
	}
	return c.b
}

// DecodeEntry splits an entry payload into its encoded commands. The returned
// slices alias data.
func DecodeEntry(data []byte) ([][]byte, error) {
	if len(data) > 0 && data[0] != entryVersion {
		return nil, fmt.Errorf("%w: unknown entry version %d", ErrMalformed, data[0])
	}
	c := decoding(data)
	c.take(1)
	var n uint64
	c.uvarint(&n)
	if c.err == nil && (n == 0 || n > MaxCommandsPerEntry) {
		c.fail("entry holds %d commands", n)
	}
	if c.err != nil {
		return nil, c.err
	}
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		out = append(out, c.take(c.readLength(MaxEntryBytes, "command")))
	}
	if c.err != nil {
		return nil, c.err
	}
	if len(c.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after entry", ErrMalformed, len(c.b))
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

func (r *Result) code(c *coder) {
	c.str((*string)(&r.Code), 64, "code")
	c.str(&r.Message, MaxStringBytes, "message")
	c.uvarint(&r.Revision)
	c.bytes(&r.Value, MaxEntryBytes, "value")
	c.bool(&r.Replayed)
}

// decodeResultsVersion checks the version byte of EncodeResult(s)'s output.
func decodeResultsVersion(b []byte) error {
	if len(b) > 0 && b[0] != resultVersion {
		return fmt.Errorf("%w: unknown result version %d", ErrMalformed, b[0])
	}
	return nil
}

// EncodeResult encodes one result (for idempotency records). Like the
// entities, it cannot fail in practice: codes are short, messages are
// written by the state machine.
func EncodeResult(r *Result) []byte {
	c := encoding(32 + len(r.Message) + len(r.Value))
	c.version(resultVersion, "result")
	r.code(&c)
	return c.b
}

// DecodeResult decodes EncodeResult's output.
func DecodeResult(b []byte) (Result, error) {
	if err := decodeResultsVersion(b); err != nil {
		return Result{}, err
	}
	c := decoding(b)
	c.version(resultVersion, "result")
	var r Result
	r.code(&c)
	return r, c.err
}

// EncodeResults encodes the results of one entry, in command order.
func EncodeResults(rs []Result) []byte {
	c := encoding(64)
	c.version(resultVersion, "result")
	list(&c, &rs, MaxCommandsPerEntry, "results", walk[Result])
	return c.b
}

// DecodeResults decodes EncodeResults's output.
func DecodeResults(b []byte) ([]Result, error) {
	if err := decodeResultsVersion(b); err != nil {
		return nil, err
	}
	c := decoding(b)
	c.version(resultVersion, "result")
	var out []Result
	list(&c, &out, MaxCommandsPerEntry, "results", walk[Result])
	return out, c.err
}
