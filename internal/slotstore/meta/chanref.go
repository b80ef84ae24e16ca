package meta

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Channel identity, shared by every row about a channel (memberships, CMD
// bindings, runtime meta, migration tasks, events): a channel type 1–255 and
// a channel id of 1–MaxChannelIDBytes bytes of UTF-8 without control
// characters, whitespace or '/'. The route key of a channel's own rows is
// its channel id alone, so channels of different types with one id share a
// hash slot.
const MaxChannelIDBytes = 128

// ChannelRefProblem says what is wrong with a channel identity, or "" if
// nothing. The API checks it before proposing; appliers check it again,
// because a command in the log may not have come through the API.
func ChannelRefProblem(channelType uint8, channelID string) string {
	if channelType == 0 {
		return "channel_type must be 1 to 255"
	}
	if len(channelID) == 0 || len(channelID) > MaxChannelIDBytes {
		return fmt.Sprintf("channel_id must be 1 to %d bytes", MaxChannelIDBytes)
	}
	if !utf8.ValidString(channelID) {
		return "channel_id must be valid UTF-8"
	}
	for _, c := range channelID {
		if unicode.IsControl(c) || unicode.IsSpace(c) || c == '/' {
			return "channel_id must not contain control characters, whitespace or '/'"
		}
	}
	return ""
}

func encChannelRef(e *encoder, channelType uint8, channelID string) {
	e.u8(channelType)
	e.str(channelID)
}

func decChannelRef(d *decoder) (uint8, string) {
	t := d.u8()
	return t, d.str(MaxKeyBytes)
}

// maxQueryLimit bounds a decoded query's page size.
const maxQueryLimit = 100000

func encLimit(e *encoder, limit int) { e.uvarint(uint64(max(limit, 0))) }

func decLimit(d *decoder) int {
	n := d.uvarint()
	if n > maxQueryLimit {
		d.fail("page limit %d", n)
		return 0
	}
	return int(n)
}

// encU64s / decU64s encode a short list of unsigned integers (node ids).
func encU64s(e *encoder, vs []uint64) {
	e.uvarint(uint64(len(vs)))
	for _, v := range vs {
		e.uvarint(v)
	}
}

func decU64s(d *decoder, maxItems int) []uint64 {
	n := d.uvarint()
	if d.err() != nil {
		return nil
	}
	if n > uint64(maxItems) || n > uint64(len(d.b)) { // each item takes at least one byte
		d.fail("list of %d items (limit %d, %d bytes left)", n, maxItems, len(d.b))
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]uint64, 0, n)
	for i := uint64(0); i < n && d.err() == nil; i++ {
		out = append(out, d.uvarint())
	}
	if d.err() != nil {
		return nil
	}
	return out
}

// decPageItems decodes count | count × (length | entity) of a page answer.
// An empty page decodes as a nil slice.
func decPageItems[T any](d *decoder, dec func([]byte) (*T, error)) ([]*T, error) {
	n := d.uvarint()
	if d.err() == nil && (n > maxPageItems || n > uint64(len(d.b))) {
		d.fail("page of %d items", n)
	}
	if d.err() != nil {
		return nil, d.err()
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]*T, 0, n)
	for i := uint64(0); i < n; i++ {
		raw := d.bytes(MaxEntryBytes)
		if d.err() != nil {
			return nil, d.err()
		}
		v, err := dec(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// SeqWindow is the per-channel counter record of a bounded, numbered
// sequence of rows (migration tasks, events): numbers Oldest..Last are
// kept; numbers are assigned from Last+1 and never reused. It is stored at
// number 0 of its sequence, which no row uses. An empty window has
// Oldest == Last+1.
type SeqWindow struct {
	Last   uint64
	Oldest uint64
}

// Count is how many rows the window holds.
func (w SeqWindow) Count() uint64 {
	if w.Oldest == 0 || w.Last < w.Oldest {
		return 0
	}
	return w.Last - w.Oldest + 1
}

// EncodeSeqWindow encodes w as a stored value.
func EncodeSeqWindow(w SeqWindow) []byte {
	e := encoder{b: make([]byte, 0, 12)}
	e.u8(entityVersion)
	e.uvarint(w.Last)
	e.uvarint(w.Oldest)
	return e.b
}

// DecodeSeqWindow decodes a stored window.
func DecodeSeqWindow(b []byte) (SeqWindow, error) {
	d := decoder{b: b}
	if v := d.u8(); v != entityVersion && d.err() == nil {
		d.fail("unknown sequence window version %d", v)
	}
	w := SeqWindow{Last: d.uvarint(), Oldest: d.uvarint()}
	return w, d.err()
}
