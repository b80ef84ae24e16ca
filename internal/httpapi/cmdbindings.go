package httpapi

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// cmdBindingRoutes serves /v1/users/{uid}/cmd-bindings.
type cmdBindingRoutes struct{ *api }

// cmdBindingPut is the body of PUT …/cmd-bindings/{channel_type}/{channel_id}.
type cmdBindingPut struct {
	StartSeq *uint64 `json:"start_seq" validate:"required"`
}

// cmdBindingAck is the body of POST …/ack.
type cmdBindingAck struct {
	AckSeq *uint64 `json:"ack_seq" validate:"required"`
}

type cmdBindingJSON struct {
	UID         string `json:"uid"`
	ChannelType uint8  `json:"channel_type"`
	ChannelID   string `json:"channel_id"`
	StartSeq    uint64 `json:"start_seq"`
	AckSeq      uint64 `json:"ack_seq"`
	CreatedAtMs int64  `json:"created_at_ms"`
	UpdatedAtMs int64  `json:"updated_at_ms"`
	Revision    uint64 `json:"revision"`
}

func cmdBindingOut(b *meta.CmdBinding) cmdBindingJSON {
	return cmdBindingJSON{
		UID: b.UID, ChannelType: b.ChannelType, ChannelID: b.ChannelID, StartSeq: b.StartSeq, AckSeq: b.AckSeq,
		CreatedAtMs: b.CreatedAtMs, UpdatedAtMs: b.UpdatedAtMs, Revision: b.Revision,
	}
}

// cmdBindingRow is a CMD binding: GET answers it; DELETE: 204, or 404.
var cmdBindingRow = userChannelRow("CMD binding", "to", meta.DecodeCmdBinding, cmdBindingOut,
	func(uc meta.UserChannel) meta.For[*meta.CmdBinding] {
		return &meta.GetCmdBinding{HashSlot: slotstore.HashSlotOfString(uc.UID), UserChannel: uc}
	},
	func(uc meta.UserChannel) meta.Command { return &meta.DeleteCmdBinding{UserChannel: uc} })

// putCmdBinding is PUT …: upsert {start_seq}; a stored ack_seq is kept. 200.
func putCmdBinding(uc meta.UserChannel, req *cmdBindingPut) meta.Command {
	return &meta.PutCmdBinding{UserChannel: uc, StartSeq: *req.StartSeq}
}

// ackCmdBinding is POST …/ack: raise ack_seq; a value at or below the
// stored one answers 200 with the row unchanged.
func ackCmdBinding(uc meta.UserChannel, req *cmdBindingAck) meta.Command {
	return &meta.AckCmdBinding{UserChannel: uc, AckSeq: *req.AckSeq}
}

// listCmdBindings is GET /v1/users/{uid}/cmd-bindings, in (channel_type,
// channel_id) order. The cursor is the last binding's channel type | id.
func (a cmdBindingRoutes) listCmdBindings(w http.ResponseWriter, r *http.Request) error {
	uid, lq, err := userListQuery(r)
	if err != nil {
		return err
	}
	q := &meta.ListCmdBindings{HashSlot: slotstore.HashSlotOfString(uid), UID: uid, Limit: lq.limit}
	if lq.cursor != "" {
		pos, err := unpackCursor(lq.cursor, tagCmdBindings)
		if err != nil {
			return err
		}
		if len(pos) < 2 || meta.ChannelRefProblem(pos[0], string(pos[1:])) != "" {
			return invalidField("cursor", "is not a cursor this listing issued")
		}
		q.HasAfter, q.AfterType, q.AfterID = true, pos[0], string(pos[1:])
	}
	p, err := readWatchedPage(a.api, w, r, uid, lq, q, noAnswer("ListCmdBindings"))
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, pageOf(p.Items, p.More, cmdBindingOut, func(last *meta.CmdBinding) string {
		return packCursor(tagCmdBindings, append([]byte{last.ChannelType}, last.ChannelID...))
	}))
	return nil
}
