package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// eventRoutes serves /v1/channels/{channel_type}/{channel_id}/events, the
// channel's bounded message-event projection.
type eventRoutes struct{ *api }

// eventRequest is the body of POST …/events. payload is any JSON value.
type eventRequest struct {
	ClientMsgNo string          `json:"client_msg_no" validate:"required,maxbytes=128"`
	EventKey    string          `json:"event_key" validate:"required,maxbytes=128"`
	EventID     string          `json:"event_id" validate:"required,maxbytes=128"`
	EventType   string          `json:"event_type" validate:"required,maxbytes=64"`
	Status      string          `json:"status" validate:"maxbytes=64"`
	Payload     json.RawMessage `json:"payload" validate:"maxbytes=16384"`
}

type eventJSON struct {
	ChannelType uint8           `json:"channel_type"`
	ChannelID   string          `json:"channel_id"`
	Seq         uint64          `json:"seq"`
	ClientMsgNo string          `json:"client_msg_no"`
	EventKey    string          `json:"event_key"`
	EventID     string          `json:"event_id"`
	EventType   string          `json:"event_type"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
	CreatedAtMs int64           `json:"created_at_ms"`
	Revision    uint64          `json:"revision"`
}

func eventOut(ev *meta.ChannelEvent) eventJSON {
	return eventJSON{
		ChannelType: ev.ChannelType, ChannelID: ev.ChannelID, Seq: ev.Seq,
		ClientMsgNo: ev.ClientMsgNo, EventKey: ev.EventKey, EventID: ev.EventID, EventType: ev.EventType,
		Status: ev.Status, Payload: rawJSONOut(string(ev.Payload)), CreatedAtMs: ev.CreatedAtMs, Revision: ev.Revision,
	}
}

// eventPage is the answer of GET …/events: besides the page, how many
// events the projection holds and the newest seq it ever assigned.
type eventPage struct {
	listPage[eventJSON]
	Count   uint64 `json:"count"`
	LastSeq uint64 `json:"last_seq"`
}

// appendEvent is POST …/events: 201 with the event and its seq. The oldest
// events beyond the projection's capacity (1000) are dropped in the same
// write.
func (a eventRoutes) appendEvent(w http.ResponseWriter, r *http.Request) error {
	var req eventRequest
	res, err := proposeAt(a.api, w, r, chanRefFromPath, channelKey, &req, func(c meta.ChanRef) (meta.Command, error) {
		payload := []byte(req.Payload)
		if bytes.Equal(payload, []byte("null")) {
			payload = nil
		}
		return &meta.AppendEvent{Event: meta.ChannelEvent{
			ChannelType: c.ChannelType, ChannelID: c.ChannelID, ClientMsgNo: req.ClientMsgNo, EventKey: req.EventKey,
			EventID: req.EventID, EventType: req.EventType, Status: req.Status, Payload: payload,
		}}, nil
	})
	if err != nil {
		return err
	}
	if len(res.Value) == 0 {
		return internalf("the append succeeded but its result carries no event")
	}
	ev, err := meta.DecodeChannelEvent(res.Value)
	if err != nil {
		return slotstore.Wrap(slotstore.CodeInternal, err, "decoding the appended event")
	}
	a.writeJSON(w, r, http.StatusCreated, eventOut(ev))
	return nil
}

// listEvents is GET …/events: newest first. The cursor is the last event's seq.
func (a eventRoutes) listEvents(w http.ResponseWriter, r *http.Request) error {
	t, id, lq, before, err := channelSeqList(r, tagEvents)
	if err != nil {
		return err
	}
	q := &meta.ListEvents{HashSlot: slotstore.HashSlotOfString(id), ChanRef: meta.ChanRef{ChannelType: t, ChannelID: id},
		BeforeSeq: before, Limit: lq.limit}
	p, err := readPage(a.api, w, r, id, lq, q, noAnswer("ListEvents"))
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, eventPage{
		listPage: pageOf(p.Items, p.More, eventOut, func(last *meta.ChannelEvent) string { return seqCursor(tagEvents, last.Seq) }),
		Count:    p.Count, LastSeq: p.LastSeq,
	})
	return nil
}
