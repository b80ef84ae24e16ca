package httpapi

import (
	"encoding/json"
	"net/http"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

// channelRoutes serves /v1/channels: the channels and, under each, its
// subscriber, deny and allow lists (channellists.go). A channel is
// identified by (channel_type, channel_id); its route key is channel_id.
type channelRoutes struct{ *api }

// channelRequest is the body of POST /v1/channels.
type channelRequest struct {
	ChannelID     string          `json:"channel_id" validate:"required,uid"`
	ChannelType   int             `json:"channel_type" validate:"min=1,max=255"`
	Ban           bool            `json:"ban"`
	Disband       bool            `json:"disband"`
	SendBan       bool            `json:"send_ban"`
	AllowStranger bool            `json:"allow_stranger"`
	Large         bool            `json:"large"`
	Extra         json.RawMessage `json:"extra" validate:"maxbytes=65536"`
}

// channelPutRequest is the body of PUT /v1/channels/{channel_type}/{channel_id}:
// the flags and extra, which replace the channel's. An identity in the body
// must equal the path's.
type channelPutRequest struct {
	ChannelID     string          `json:"channel_id" validate:"omitempty,uid"`
	ChannelType   int             `json:"channel_type" validate:"omitempty,min=1,max=255"`
	Ban           bool            `json:"ban"`
	Disband       bool            `json:"disband"`
	SendBan       bool            `json:"send_ban"`
	AllowStranger bool            `json:"allow_stranger"`
	Large         bool            `json:"large"`
	Extra         json.RawMessage `json:"extra" validate:"maxbytes=65536"`
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

func channelNotFound(channelType uint8, id string) error {
	return slotstore.Errorf(slotstore.CodeNotFound, "channel %d/%q not found", channelType, id)
}

// createChannel is POST /v1/channels: 201, or 409 conflict if it exists.
func (a channelRoutes) createChannel(w http.ResponseWriter, r *http.Request) error {
	var req channelRequest
	idemKey, f, err := a.writeBody(w, r, &req)
	if err != nil {
		return err
	}
	info := meta.ChannelInfo{
		Type: uint8(req.ChannelType), ID: req.ChannelID,
		Ban: req.Ban, Disband: req.Disband, SendBan: req.SendBan, AllowStranger: req.AllowStranger, Large: req.Large,
		Extra: rawJSONIn(req.Extra),
	}
	res, err := a.propose(w, r, target{req.ChannelID, f}, idemKey, &meta.CreateChannel{Channel: info})
	if err != nil {
		return err
	}
	c, err := resultEntity(res, "channel", meta.DecodeChannel)
	if err != nil {
		return err
	}
	w.Header().Set("Location", channelPath(c.Type, c.ID, ""))
	a.writeJSON(w, r, http.StatusCreated, channelOut(c))
	return nil
}

// putChannel is PUT /v1/channels/{channel_type}/{channel_id}: create the
// channel or replace its flags and extra (200); its lists and counts stay.
func (a channelRoutes) putChannel(w http.ResponseWriter, r *http.Request) error {
	channelType, id, err := channelFromPath(r)
	if err != nil {
		return err
	}
	var req channelPutRequest
	idemKey, f, err := a.writeBody(w, r, &req)
	if err != nil {
		return err
	}
	if req.ChannelID != "" && req.ChannelID != id {
		return invalidField("channel_id", "must equal the channel_id in the path")
	}
	if req.ChannelType != 0 && req.ChannelType != int(channelType) {
		return invalidField("channel_type", "must equal the channel_type in the path")
	}
	info := meta.ChannelInfo{
		Type: channelType, ID: id,
		Ban: req.Ban, Disband: req.Disband, SendBan: req.SendBan, AllowStranger: req.AllowStranger, Large: req.Large,
		Extra: rawJSONIn(req.Extra),
	}
	res, err := a.propose(w, r, target{id, f}, idemKey, &meta.PutChannel{Channel: info})
	if err != nil {
		return err
	}
	c, err := resultEntity(res, "channel", meta.DecodeChannel)
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, channelOut(c))
	return nil
}

// getChannel is GET /v1/channels/{channel_type}/{channel_id}, with the
// counts of its lists.
func (a channelRoutes) getChannel(w http.ResponseWriter, r *http.Request) error {
	channelType, id, err := channelFromPath(r)
	if err != nil {
		return err
	}
	c, f, err := readParams(r)
	if err != nil {
		return err
	}
	ch, err := read(a.api, w, r, target{id, f}, c,
		&meta.GetChannel{HashSlot: slotstore.HashSlotOfString(id), ChannelType: channelType, ChannelID: id})
	if err != nil {
		return err
	}
	if ch == nil {
		return channelNotFound(channelType, id)
	}
	a.writeJSON(w, r, http.StatusOK, channelOut(ch))
	return nil
}

// deleteChannel is DELETE /v1/channels/{channel_type}/{channel_id}: 204
// (the channel and its three lists are gone), or 404.
func (a channelRoutes) deleteChannel(w http.ResponseWriter, r *http.Request) error {
	channelType, id, err := channelFromPath(r)
	if err != nil {
		return err
	}
	return a.remove(w, r, id, &meta.DeleteChannel{ChannelType: channelType, ChannelID: id})
}
