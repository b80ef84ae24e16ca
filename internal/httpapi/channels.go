package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// channelRoutes serves /v1/channels: the channels and, under each, its
// subscriber, deny and allow lists (channellists.go). A channel is
// identified by (channel_type, channel_id); its route key is channel_id.
type channelRoutes struct{ *api }

// channelFlagsJSON is what a client sets on a channel besides its
// identity: the flags and extra, which a write replaces.
type channelFlagsJSON struct {
	Ban           bool            `json:"ban"`
	Disband       bool            `json:"disband"`
	SendBan       bool            `json:"send_ban"`
	AllowStranger bool            `json:"allow_stranger"`
	Large         bool            `json:"large"`
	Extra         json.RawMessage `json:"extra" validate:"maxbytes=65536"`
}

// info is channel (typ, id) with these flags and extra.
func (f *channelFlagsJSON) info(typ uint8, id string) meta.ChannelInfo {
	return meta.ChannelInfo{
		Type: typ, ID: id,
		Ban: f.Ban, Disband: f.Disband, SendBan: f.SendBan, AllowStranger: f.AllowStranger, Large: f.Large,
		Extra: rawJSONIn(f.Extra),
	}
}

// channelRequest is the body of POST /v1/channels.
type channelRequest struct {
	ChannelID   string `json:"channel_id" validate:"required,uid"`
	ChannelType int    `json:"channel_type" validate:"min=1,max=255"`
	channelFlagsJSON
}

// channelPutRequest is the body of PUT /v1/channels/{channel_type}/{channel_id}:
// the flags and extra, which replace the channel's. An identity in the body
// is optional and must equal the path's.
type channelPutRequest struct {
	ChannelID   string `json:"channel_id" validate:"omitempty,uid"`
	ChannelType int    `json:"channel_type" validate:"omitempty,min=1,max=255"`
	channelFlagsJSON
}

// channelJSON is a channel as the API shows it.
type channelJSON struct {
	ChannelID         string          `json:"channel_id"`
	ChannelType       uint8           `json:"channel_type"`
	Ban               bool            `json:"ban"`
	Disband           bool            `json:"disband"`
	SendBan           bool            `json:"send_ban"`
	AllowStranger     bool            `json:"allow_stranger"`
	Large             bool            `json:"large"`
	Extra             json.RawMessage `json:"extra"`
	SubscriberCount   uint64          `json:"subscriber_count"`
	DenylistCount     uint64          `json:"denylist_count"`
	AllowlistCount    uint64          `json:"allowlist_count"`
	PendingProjection uint64          `json:"pending_projection"`
	CreatedAtMs       int64           `json:"created_at_ms"`
	UpdatedAtMs       int64           `json:"updated_at_ms"`
	Revision          uint64          `json:"revision"`
}

func channelOut(c *meta.Channel) channelJSON {
	return channelJSON{
		ChannelID: c.ID, ChannelType: c.Type,
		Ban: c.Ban, Disband: c.Disband, SendBan: c.SendBan, AllowStranger: c.AllowStranger, Large: c.Large,
		Extra:           rawJSONOut(c.Extra),
		SubscriberCount: c.SubscriberCount, DenylistCount: c.DenylistCount, AllowlistCount: c.AllowlistCount,
		PendingProjection: c.PendingProjection,
		CreatedAtMs:       c.CreatedAtMs, UpdatedAtMs: c.UpdatedAtMs, Revision: c.Revision,
	}
}

// channelRow is a channel: GET /v1/channels/{channel_type}/{channel_id},
// with the counts of its lists; DELETE: 204 (the channel and its three
// lists are gone), or 404.
var channelRow = row[meta.ChanRef, meta.Channel, channelJSON]{
	noun: "channel", path: chanRefFromPath, key: channelKey, decode: meta.DecodeChannel, out: channelOut,
	get: func(c meta.ChanRef) meta.For[*meta.Channel] {
		return &meta.GetChannel{HashSlot: slotstore.HashSlotOfString(c.ChannelID), ChannelType: c.ChannelType, ChannelID: c.ChannelID}
	},
	missing: func(c meta.ChanRef) error { return channelNotFound(c.ChannelType, c.ChannelID) },
	del: func(c meta.ChanRef) meta.Command {
		return &meta.DeleteChannel{ChannelType: c.ChannelType, ChannelID: c.ChannelID}
	},
	location: func(c *meta.Channel) string { return channelPath(c.Type, c.ID, "") },
}

func channelNotFound(channelType uint8, id string) error {
	return notFound("channel %d/%q not found", channelType, id)
}

// createChannel is POST /v1/channels: 201, or 409 conflict if it exists.
func (a channelRoutes) createChannel(w http.ResponseWriter, r *http.Request) error {
	var req channelRequest
	return channelRow.create(a.api, w, r, &req, func() (string, meta.Command, error) {
		return req.ChannelID, &meta.CreateChannel{Channel: req.info(uint8(req.ChannelType), req.ChannelID)}, nil
	})
}

// putChannel is PUT /v1/channels/{channel_type}/{channel_id}: create the
// channel or replace its flags and extra (200); its lists and counts stay.
func (a channelRoutes) putChannel(w http.ResponseWriter, r *http.Request) error {
	var req channelPutRequest
	return channelRow.write(a.api, w, r, http.StatusOK, &req, func(c meta.ChanRef) (meta.Command, error) {
		if req.ChannelID != "" && req.ChannelID != c.ChannelID {
			return nil, invalidField("channel_id", "must equal the channel_id in the path")
		}
		if req.ChannelType != 0 && req.ChannelType != int(c.ChannelType) {
			return nil, invalidField("channel_type", "must equal the channel_type in the path")
		}
		return &meta.PutChannel{Channel: req.info(c.ChannelType, c.ChannelID)}, nil
	})
}
