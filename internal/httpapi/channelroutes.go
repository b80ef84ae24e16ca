package httpapi

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Shared by every resource addressed by a channel identity: the channel's
// own sub-resources under /v1/channels/{channel_type}/{channel_id}/… and a
// user's rows about a channel under /v1/users/{uid}/…/{channel_type}/{channel_id}.
//
// A channel is (channel_type 1–255, channel_id 1–128 bytes of UTF-8 without
// control characters, whitespace or '/', and not "." or ".."); its route
// key is the channel id.

// channelIDProblem says what is wrong with a channel id, or "" if nothing.
func channelIDProblem(id string) string {
	if id == "." || id == ".." {
		return `must not be "." or ".."`
	}
	switch {
	case len(id) == 0 || len(id) > meta.MaxChannelIDBytes:
		return "must be 1 to " + strconv.Itoa(meta.MaxChannelIDBytes) + " bytes"
	case meta.ChannelRefProblem(1, id) != "":
		return "must be valid UTF-8 without control characters, whitespace or '/'"
	}
	return ""
}

// parseChannelType parses a decimal channel type 1–255 (no leading zeros).
func parseChannelType(s string) (uint8, bool) {
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil || n == 0 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	return uint8(n), true
}

// channelFromPath returns the {channel_type} and {channel_id} path parameters.
func channelFromPath(r *http.Request) (uint8, string, error) {
	raw, err := pathParam(r, "channel_type", func(string) string { return "" })
	if err != nil {
		return 0, "", err
	}
	t, ok := parseChannelType(raw)
	if !ok {
		return 0, "", invalidField("channel_type", "must be a decimal integer from 1 to 255")
	}
	id, err := pathParam(r, "channel_id", channelIDProblem)
	if err != nil {
		return 0, "", err
	}
	return t, id, nil
}

// chanRefFromPath returns the channel of the path.
func chanRefFromPath(r *http.Request) (meta.ChanRef, error) {
	t, id, err := channelFromPath(r)
	return meta.ChanRef{ChannelType: t, ChannelID: id}, err
}

// channelKey is the route key of a channel's rows: the channel id.
func channelKey(c meta.ChanRef) string { return c.ChannelID }

// channelPath is the path of a channel's sub-resource.
func channelPath(channelType uint8, channelID, sub string) string {
	return "/v1/channels/" + strconv.Itoa(int(channelType)) + "/" + url.PathEscape(channelID) + sub
}

// listQuery is what a keyed listing takes: ?cursor=&limit=&consistency= and
// the X-Route-Revision fence.
type listQuery struct {
	limit  int
	cursor string
	c      meta.Consistency
	fence  fence
}

func parseListQuery(r *http.Request) (listQuery, error) {
	q, err := queryParams(r)
	if err != nil {
		return listQuery{}, err
	}
	var lq listQuery
	if lq.limit, err = limitParam(q); err != nil {
		return listQuery{}, err
	}
	if lq.c, err = consistencyParam(q); err != nil {
		return listQuery{}, err
	}
	if lq.cursor, _, err = single(q, "cursor"); err != nil {
		return listQuery{}, err
	}
	if lq.fence, err = routeFence(r); err != nil {
		return listQuery{}, err
	}
	return lq, nil
}

// Keyed listing cursors: base64url (no padding) of version | listing tag |
// position. The tag keeps a cursor of one listing from being accepted by
// another; the position is the last item's sort key, never a node.
const (
	keyedCursorVersion = 1
	maxKeyedCursor     = 600 // decoded bytes: a tag, a varint and a channel

	tagMemberships = 'm'
	tagCmdBindings = 'c'
	tagMigrations  = 't'
	tagEvents      = 'e'
)

func packCursor(tag byte, pos []byte) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{keyedCursorVersion, tag}, pos...))
}

// unpackCursor returns the position of a cursor packCursor made with tag.
func unpackCursor(s string, tag byte) ([]byte, error) {
	bad := invalidField("cursor", "is not a cursor this listing issued")
	if len(s) > base64.RawURLEncoding.EncodedLen(maxKeyedCursor) {
		return nil, bad
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < 2 || b[0] != keyedCursorVersion || b[1] != tag {
		return nil, bad
	}
	return b[2:], nil
}
