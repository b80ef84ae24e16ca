package httpapi

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// channelListRoutes serves the five shapes of one list of a channel
// (subscribers, denylist, allowlist) under /v1/channels:
//
//	POST   /{channel_type}/{channel_id}/<list>         {uids} add
//	POST   /{channel_type}/{channel_id}/<list>/remove  {uids} remove
//	DELETE /{channel_type}/{channel_id}/<list>/{uid}   remove one (404 if absent)
//	GET    /{channel_type}/{channel_id}/<list>         page in uid order
//	GET    /{channel_type}/{channel_id}/<list>/{uid}   membership test
//
// A list is a set stored with the channel; the channel must exist (404).
type channelListRoutes struct{ *api }

// routes are the rows of list l in the route table (router.go).
func (a channelListRoutes) routes(l meta.ChannelList) []route {
	base := "/{channel_type}/{channel_id}/" + l.String()
	return []route{
		{http.MethodPost, base, a.changeMembers(l, true)},
		{http.MethodPost, base + "/remove", a.changeMembers(l, false)},
		{http.MethodGet, base, a.listMembers(l)},
		{http.MethodGet, base + "/{uid}", memberRow(l).fetch(a.api)},
		{http.MethodDelete, base + "/{uid}", memberRow(l).remove(a.api)},
	}
}

// membersRequest is the body of the add and remove calls. A uid may repeat
// (set semantics: it counts once).
type membersRequest struct {
	UIDs []string `json:"uids" validate:"required,min=1,max=1000,dive,uid"`
}

// membersAdded and membersRemoved answer the add and remove calls: how many
// uids the call actually added or removed, and the list's size after it.
type membersAdded struct {
	Added uint64 `json:"added"`
	Count uint64 `json:"count"`
}

type membersRemoved struct {
	Removed uint64 `json:"removed"`
	Count   uint64 `json:"count"`
}

// memberJSON is one member of a list as the API shows it.
type memberJSON struct {
	UID       string `json:"uid"`
	AddedAtMs int64  `json:"added_at_ms"`
}

// listTag is the cursor tag of list l.
func listTag(l meta.ChannelList) byte {
	switch l {
	case meta.ListDenylist:
		return tagDenylist
	case meta.ListAllowlist:
		return tagAllowlist
	}
	return tagSubscribers
}

// changeMembers is POST …/<list> (add) and POST …/<list>/remove.
func (a channelListRoutes) changeMembers(l meta.ChannelList, add bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req membersRequest
		res, err := proposeAt(a.api, w, r, chanRefFromPath, channelKey, &req, func(c meta.ChanRef) (meta.Command, error) {
			body := meta.ChannelMembers{List: l, ChannelType: c.ChannelType, ChannelID: c.ChannelID, UIDs: req.UIDs}
			if add {
				return &meta.AddChannelMembers{ChannelMembers: body}, nil
			}
			return &meta.RemoveChannelMembers{ChannelMembers: body}, nil
		})
		if err != nil {
			return err
		}
		ch, err := resultEntity(res, "list change", meta.DecodeListChange)
		if err != nil {
			return err
		}
		if add {
			a.writeJSON(w, r, http.StatusOK, membersAdded{Added: ch.Changed, Count: ch.Count})
		} else {
			a.writeJSON(w, r, http.StatusOK, membersRemoved{Removed: ch.Changed, Count: ch.Count})
		}
		return nil
	}
}

// memberKey names a uid in a list of a channel.
type memberKey struct {
	meta.ChanRef
	uid string
}

// memberFromPath parses the channel and {uid} of a list member's path.
func memberFromPath(r *http.Request) (memberKey, error) {
	c, err := chanRefFromPath(r)
	if err != nil {
		return memberKey{}, err
	}
	uid, err := userFromPath(r)
	return memberKey{c, uid}, err
}

func memberOut(m *meta.ChannelMember) memberJSON {
	return memberJSON{UID: m.UID, AddedAtMs: m.AddedAtMs}
}

// memberRow is a uid in list l: GET …/<list>/{uid} answers 200
// {"uid",…} when uid is in the list, else 404; DELETE: 204, or 404 when
// the uid is not in the list (or the channel does not exist).
func memberRow(l meta.ChannelList) row[memberKey, meta.ChannelMember, memberJSON] {
	return row[memberKey, meta.ChannelMember, memberJSON]{
		noun: "member", path: memberFromPath, key: func(k memberKey) string { return k.ChannelID },
		decode: meta.DecodeChannelMember, out: memberOut,
		get: func(k memberKey) meta.For[*meta.ChannelMember] {
			return &meta.GetChannelMember{HashSlot: slotstore.HashSlotOfString(k.ChannelID), List: l,
				ChannelType: k.ChannelType, ChannelID: k.ChannelID, UID: k.uid}
		},
		missing: func(k memberKey) error {
			return notFound("%q is not in the %s of channel %d/%q", k.uid, l, k.ChannelType, k.ChannelID)
		},
		del: func(k memberKey) meta.Command {
			return &meta.DeleteChannelMember{List: l, ChannelType: k.ChannelType, ChannelID: k.ChannelID, UID: k.uid}
		},
	}
}

// listMembers is GET …/<list>?cursor=&limit=: one page of the list in uid
// order; 404 when the channel does not exist.
func (a channelListRoutes) listMembers(l meta.ChannelList) handlerFunc {
	tag := listTag(l)
	return func(w http.ResponseWriter, r *http.Request) error {
		channelType, id, err := channelFromPath(r)
		if err != nil {
			return err
		}
		lq, after, err := keyedListQuery(r, tag, uidProblem)
		if err != nil {
			return err
		}
		q := &meta.ScanChannelList{HashSlot: slotstore.HashSlotOfString(id), List: l, ChannelType: channelType, ChannelID: id,
			AfterUID: after, Limit: lq.limit}
		p, err := readWatchedPage(a.api, w, r, id, lq, q, func() error { return channelNotFound(channelType, id) })
		if err != nil {
			return err
		}
		a.writeJSON(w, r, http.StatusOK, pageOf(p.Members, p.More, memberOut,
			func(last *meta.ChannelMember) string { return packCursor(tag, []byte(last.UID)) }))
		return nil
	}
}
