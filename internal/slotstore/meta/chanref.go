package meta

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/slotmeta/slotmeta/internal/slotstore"
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

// channelRef codes a channel identity: type, then id.
func (c *coder) channelRef(channelType *uint8, channelID *string) {
	c.u8(channelType)
	c.str(channelID, MaxKeyBytes, "channel id")
}

// maxQueryLimit bounds a decoded query's page size.
const maxQueryLimit = 100000

// pageLimit codes a list query's page size.
func (c *coder) pageLimit(p *int) { c.limit(p, maxQueryLimit, "page limit") }

// channelScan codes a query that lists a channel's numbered rows (tasks,
// events) newest first: hash slot, channel, before which number, limit.
func (c *coder) channelScan(slot *slotstore.HashSlot, ref *ChanRef, before *uint64, limit *int) {
	c.slot(slot)
	ref.code(c)
	c.uvarint(before)
	c.pageLimit(limit)
}

// u64s codes a short list of unsigned integers (node ids).
func (c *coder) u64s(p *[]uint64, maxItems int, what string) {
	list(c, p, maxItems, what, (*coder).uvarint)
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

func (w *SeqWindow) code(c *coder) {
	c.version(entityVersion, "sequence window")
	c.uvarint(&w.Last)
	c.uvarint(&w.Oldest)
}

// EncodeSeqWindow encodes w as a stored value.
func EncodeSeqWindow(w SeqWindow) []byte { return encodeEntity(&w) }

// DecodeSeqWindow decodes a stored window.
func DecodeSeqWindow(b []byte) (SeqWindow, error) {
	w, err := decodeEntity[SeqWindow](b)
	if err != nil {
		return SeqWindow{}, err
	}
	return *w, nil
}
