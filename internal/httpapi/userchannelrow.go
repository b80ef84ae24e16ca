package httpapi

import (
	"net/http"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

// userChannelRow is a resource stored per (user, channel) in the user's
// group — a membership or a CMD binding — under
// /v1/users/{uid}/<resource>/{channel_type}/{channel_id}. Its handlers
// differ only in the entity they decode and show, so they share the path
// parsing, the write/get/delete flow and the error texts here.
type userChannelRow[E, J any] struct {
	noun   string // "membership", "CMD binding" (for messages)
	of     string // "of", "to": "user u has no membership of channel …"
	decode func([]byte) (*E, error)
	out    func(*E) J
	get    func(meta.UserChannel) meta.For[*E]
	del    func(meta.UserChannel) meta.Command
}

// write parses the path and write headers, decodes body (if not nil),
// proposes the command build makes and answers the row it wrote or found.
func (row userChannelRow[E, J]) write(a *api, w http.ResponseWriter, r *http.Request, body any, build func(meta.UserChannel) meta.Command) error {
	uc, err := userChannelFromPath(r)
	if err != nil {
		return err
	}
	idemKey, f, err := writeHeaders(r)
	if err != nil {
		return err
	}
	if body != nil {
		if err := a.decode(w, r, body); err != nil {
			return err
		}
	}
	res, err := a.propose(w, r, target{uc.UID, f}, idemKey, build(uc))
	if err != nil {
		return err
	}
	v, err := resultEntity(res, row.noun, row.decode)
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, row.out(v))
	return nil
}

// remove is DELETE …: 204, or 404.
func (row userChannelRow[E, J]) remove(a *api, w http.ResponseWriter, r *http.Request) error {
	uc, err := userChannelFromPath(r)
	if err != nil {
		return err
	}
	return a.remove(w, r, uc.UID, row.del(uc))
}

// fetch is GET …: the row, or 404.
func (row userChannelRow[E, J]) fetch(a *api, w http.ResponseWriter, r *http.Request) error {
	uc, err := userChannelFromPath(r)
	if err != nil {
		return err
	}
	c, f, err := readParams(r)
	if err != nil {
		return err
	}
	v, err := read(a, w, r, target{uc.UID, f}, c, row.get(uc))
	if err != nil {
		return err
	}
	if v == nil {
		return slotstore.Errorf(slotstore.CodeNotFound, "user %q has no %s %s channel %d/%q", uc.UID, row.noun, row.of, uc.ChannelType, uc.ChannelID)
	}
	a.writeJSON(w, r, http.StatusOK, row.out(v))
	return nil
}
