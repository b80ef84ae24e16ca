package httpapi

import (
	"encoding/binary"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// membershipRoutes serves /v1/users/{uid}/memberships.
type membershipRoutes struct{ *api }

// membershipPut is the body of PUT …/memberships/{channel_type}/{channel_id}.
// read_seq and deleted_to_seq are floors: a value below the stored one keeps
// the stored one. Without activated_at_ms a new membership is activated now
// and an existing one keeps its activation time.
type membershipPut struct {
	JoinSeq       uint64 `json:"join_seq" validate:"min=0"`
	ReadSeq       uint64 `json:"read_seq" validate:"min=0"`
	DeletedToSeq  uint64 `json:"deleted_to_seq" validate:"min=0"`
	ActivatedAtMs *int64 `json:"activated_at_ms" validate:"omitempty,min=0"`
	Tombstone     bool   `json:"tombstone"`
}

// membershipRead is the body of POST …/read.
type membershipRead struct {
	ReadSeq *uint64 `json:"read_seq" validate:"required"`
}

// membershipHide is the body of POST …/hide.
type membershipHide struct {
	ToSeq *uint64 `json:"to_seq" validate:"required"`
}

// membershipJSON is a membership as the API shows it.
type membershipJSON struct {
	UID           string `json:"uid"`
	ChannelType   uint8  `json:"channel_type"`
	ChannelID     string `json:"channel_id"`
	JoinSeq       uint64 `json:"join_seq"`
	ReadSeq       uint64 `json:"read_seq"`
	DeletedToSeq  uint64 `json:"deleted_to_seq"`
	ActivatedAtMs int64  `json:"activated_at_ms"`
	Tombstone     bool   `json:"tombstone"`
	CreatedAtMs   int64  `json:"created_at_ms"`
	UpdatedAtMs   int64  `json:"updated_at_ms"`
	Revision      uint64 `json:"revision"`
}

func membershipOut(m *meta.Membership) membershipJSON {
	return membershipJSON{
		UID: m.UID, ChannelType: m.ChannelType, ChannelID: m.ChannelID,
		JoinSeq: m.JoinSeq, ReadSeq: m.ReadSeq, DeletedToSeq: m.DeletedToSeq,
		ActivatedAtMs: m.ActivatedAtMs, Tombstone: m.Tombstone,
		CreatedAtMs: m.CreatedAtMs, UpdatedAtMs: m.UpdatedAtMs, Revision: m.Revision,
	}
}

// userChannelFromPath returns {uid}, {channel_type} and {channel_id}.
func userChannelFromPath(r *http.Request) (meta.UserChannel, error) {
	uid, err := userFromPath(r)
	if err != nil {
		return meta.UserChannel{}, err
	}
	t, id, err := channelFromPath(r)
	if err != nil {
		return meta.UserChannel{}, err
	}
	return meta.UserChannel{UID: uid, ChannelType: t, ChannelID: id}, nil
}

// userChannelRow is a row a user keeps about a channel — a membership, a
// CMD binding — under /v1/users/{uid}/<resource>/{channel_type}/{channel_id},
// stored in the user's group; of joins noun to the channel in its 404
// ("user u has no membership of channel …").
func userChannelRow[E, J any](noun, of string, decode func([]byte) (*E, error), out func(*E) J,
	get func(meta.UserChannel) meta.For[*E], del func(meta.UserChannel) meta.Command) row[meta.UserChannel, E, J] {
	return row[meta.UserChannel, E, J]{
		noun: noun, path: userChannelFromPath, key: func(uc meta.UserChannel) string { return uc.UID },
		decode: decode, out: out, get: get, del: del,
		missing: func(uc meta.UserChannel) error {
			return notFound("user %q has no %s %s channel %d/%q", uc.UID, noun, of, uc.ChannelType, uc.ChannelID)
		},
	}
}

// membershipRow is a membership: GET answers it, tombstones included;
// DELETE: 204, or 404.
var membershipRow = userChannelRow("membership", "of", meta.DecodeMembership, membershipOut,
	func(uc meta.UserChannel) meta.For[*meta.Membership] {
		return &meta.GetMembership{HashSlot: slotstore.HashSlotOfString(uc.UID), UserChannel: uc}
	},
	func(uc meta.UserChannel) meta.Command { return &meta.DeleteMembership{UserChannel: uc} })

// putMembership is PUT /v1/users/{uid}/memberships/{channel_type}/{channel_id}: upsert, 200.
func putMembership(uc meta.UserChannel, req *membershipPut) meta.Command {
	c := &meta.PutMembership{UserChannel: uc, JoinSeq: req.JoinSeq, ReadSeq: req.ReadSeq,
		DeletedToSeq: req.DeletedToSeq, Tombstone: req.Tombstone}
	if req.ActivatedAtMs != nil {
		c.HasActivatedAt, c.ActivatedAtMs = true, *req.ActivatedAtMs
	}
	return c
}

// readMembership is POST …/read: raise the badge floor. A read_seq at or
// below the stored one answers 200 with the row unchanged.
func readMembership(uc meta.UserChannel, req *membershipRead) meta.Command {
	return &meta.ReadMembership{UserChannel: uc, ReadSeq: *req.ReadSeq}
}

// hideMembership is POST …/hide: raise deleted_to_seq (same rule as read).
func hideMembership(uc meta.UserChannel, req *membershipHide) meta.Command {
	return &meta.HideMembership{UserChannel: uc, ToSeq: *req.ToSeq}
}

// activateMembership is POST …/activate (no body): activated_at_ms becomes
// the time the leader applied the command.
func (a membershipRoutes) activateMembership(w http.ResponseWriter, r *http.Request) error {
	return membershipRow.write(a.api, w, r, http.StatusOK, nil, func(uc meta.UserChannel) (meta.Command, error) {
		return &meta.ActivateMembership{UserChannel: uc}, nil
	})
}

// membershipCursor is the activity position after a membership:
// varint activated_at_ms | channel type | channel id.
func membershipCursor(m *meta.Membership) string {
	pos := binary.AppendVarint(nil, m.ActivatedAtMs)
	pos = append(append(pos, m.ChannelType), m.ChannelID...)
	return packCursor(tagMemberships, pos)
}

func parseMembershipCursor(s string) (*meta.ActivityPos, error) {
	if s == "" {
		return nil, nil
	}
	pos, err := unpackCursor(s, tagMemberships)
	if err != nil {
		return nil, err
	}
	ms, n := binary.Varint(pos)
	if n <= 0 || len(pos) < n+2 || ms < 0 {
		return nil, invalidField("cursor", "is not a cursor this listing issued")
	}
	p := &meta.ActivityPos{AtMs: ms, ChannelType: pos[n], ChannelID: string(pos[n+1:])}
	if meta.ChannelRefProblem(p.ChannelType, p.ChannelID) != "" {
		return nil, invalidField("cursor", "is not a cursor this listing issued")
	}
	return p, nil
}

// listMemberships is GET /v1/users/{uid}/memberships: the user's
// memberships that are not tombstones, newest activation first.
func (a membershipRoutes) listMemberships(w http.ResponseWriter, r *http.Request) error {
	uid, lq, err := userListQuery(r)
	if err != nil {
		return err
	}
	after, err := parseMembershipCursor(lq.cursor)
	if err != nil {
		return err
	}
	q := &meta.ListMemberships{HashSlot: slotstore.HashSlotOfString(uid), UID: uid, After: after, Limit: lq.limit}
	p, err := readWatchedPage(a.api, w, r, uid, lq, q, noAnswer("ListMemberships"))
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, pageOf(p.Items, p.More, membershipOut, membershipCursor))
	return nil
}
