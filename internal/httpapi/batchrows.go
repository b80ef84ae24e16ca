package httpapi

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Batch reads of users, channels and channels' runtime meta (batch.go has
// the flow): POST /v1/batch/users/get names uids, POST
// /v1/batch/channels/get and /v1/batch/runtime/get name channels; each
// item carries the row as its GET shows it.

// batchUsersRequest is the body of POST /v1/batch/users/get.
type batchUsersRequest struct {
	UIDs []string `json:"uids" validate:"required,min=1"`
}

type batchUserItemJSON struct {
	UID   string     `json:"uid"`
	Found bool       `json:"found"`
	User  *userJSON  `json:"user,omitempty"`
	Error *errorJSON `json:"error,omitempty"`
}

type batchUsersJSON struct {
	RouteRevision uint64              `json:"route_revision"`
	Items         []batchUserItemJSON `json:"items"`
}

// batchGetUsers is POST /v1/batch/users/get.
func (a userRoutes) batchGetUsers(w http.ResponseWriter, r *http.Request) error {
	var req batchUsersRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	items, rev, err := userBatch.read(a.api, r, req.UIDs, problemsOf(req.UIDs, func(uid string) string { return prefixed("uid", uidProblem(uid)) }))
	if err != nil {
		return err
	}
	out := batchUsersJSON{RouteRevision: rev, Items: make([]batchUserItemJSON, len(items))}
	for i, it := range items {
		out.Items[i] = batchUserItemJSON{UID: req.UIDs[i], Found: it.row != nil, User: it.row, Error: it.err}
	}
	a.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// batchChannelsRequest is the body of a batch read of channels or of their
// runtime meta.
type batchChannelsRequest struct {
	Channels []batchChannelRef `json:"channels" validate:"required,min=1"`
}

// batchChannelRef names one channel. Its values are checked per item (a
// bad one is that item's error), so the fields are plain.
type batchChannelRef struct {
	ChannelType int    `json:"channel_type"`
	ChannelID   string `json:"channel_id"`
}

// chanRefs turns the named channels into refs and their problems.
func (req batchChannelsRequest) chanRefs() ([]meta.ChanRef, []string) {
	refs := make([]meta.ChanRef, len(req.Channels))
	problems := make([]string, len(req.Channels))
	for i, c := range req.Channels {
		switch {
		case c.ChannelType < 1 || c.ChannelType > 255:
			problems[i] = "channel_type: must be from 1 to 255"
		default:
			problems[i] = prefixed("channel_id", channelIDProblem(c.ChannelID))
		}
		refs[i] = meta.ChanRef{ChannelType: uint8(c.ChannelType), ChannelID: c.ChannelID}
	}
	return refs, problems
}

type batchChannelItemJSON[J any] struct {
	ChannelType int        `json:"channel_type"`
	ChannelID   string     `json:"channel_id"`
	Found       bool       `json:"found"`
	Channel     *J         `json:"channel,omitempty"`
	Runtime     *J         `json:"runtime,omitempty"`
	Error       *errorJSON `json:"error,omitempty"`
}

type batchChannelsJSON[J any] struct {
	RouteRevision uint64                    `json:"route_revision"`
	Items         []batchChannelItemJSON[J] `json:"items"`
}

// batchGetChannels is POST /v1/batch/channels/get.
func (a channelRoutes) batchGetChannels(w http.ResponseWriter, r *http.Request) error {
	return batchGetChannelRows(a.api, w, r, channelBatch, func(it *batchChannelItemJSON[channelJSON], row *channelJSON) { it.Channel = row })
}

// batchGetRuntime is POST /v1/batch/runtime/get.
func (a runtimeRoutes) batchGetRuntime(w http.ResponseWriter, r *http.Request) error {
	return batchGetChannelRows(a.api, w, r, runtimeBatch, func(it *batchChannelItemJSON[runtimeJSON], row *runtimeJSON) { it.Runtime = row })
}

// batchGetChannelRows reads one row of each named channel with b; set puts
// a found row in its item.
func batchGetChannelRows[E, J any](a *api, w http.ResponseWriter, r *http.Request, b batchGet[meta.ChanRef, E, J],
	set func(*batchChannelItemJSON[J], *J)) error {
	var req batchChannelsRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	refs, problems := req.chanRefs()
	items, rev, err := b.read(a, r, refs, problems)
	if err != nil {
		return err
	}
	out := batchChannelsJSON[J]{RouteRevision: rev, Items: make([]batchChannelItemJSON[J], len(items))}
	for i, it := range items {
		out.Items[i] = batchChannelItemJSON[J]{ChannelType: req.Channels[i].ChannelType, ChannelID: req.Channels[i].ChannelID,
			Found: it.row != nil, Error: it.err}
		if it.row != nil {
			set(&out.Items[i], it.row)
		}
	}
	a.writeJSON(w, r, http.StatusOK, out)
	return nil
}
