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
type userChannelRow[E any] struct {
	noun   string // "membership", "CMD binding" (for messages)
	of     string // "of", "to": "user u has no membership of channel …"
	decode func([]byte) (*E, error)
	out    func(*E) any
	get    func(meta.UserChannel) meta.Query
	del    func(meta.UserChannel) meta.Command
}

// write parses the path and write headers, decodes body (if not nil),
// proposes the command build makes and answers the row it wrote or found.
func (row userChannelRow[E]) write(a *api, w http.ResponseWriter, r *http.Request, body any, build func(meta.UserChannel) meta.Command) error {
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
	if len(res.Value) == 0 {
		return internalf("the write succeeded but its result carries no %s", row.noun)
	}
	v, err := row.decode(res.Value)
	if err != nil {
		return slotstore.Wrap(slotstore.CodeInternal, err, "decoding the written "+row.noun)
	}
	a.writeJSON(w, r, http.StatusOK, row.out(v))
	return nil
}

// remove is DELETE …: 204, or 404.
func (row userChannelRow[E]) remove(a *api, w http.ResponseWriter, r *http.Request) error {
	uc, err := userChannelFromPath(r)
	if err != nil {
		return err
	}
	idemKey, f, err := writeHeaders(r)
	if err != nil {
		return err
	}
	if _, err := a.propose(w, r, target{uc.UID, f}, idemKey, row.del(uc)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fetch is GET …: the row, or 404.
func (row userChannelRow[E]) fetch(a *api, w http.ResponseWriter, r *http.Request) error {
	uc, err := userChannelFromPath(r)
	if err != nil {
		return err
	}
	c, f, err := readParams(r)
	if err != nil {
		return err
	}
	ans, err := a.read(w, r, target{uc.UID, f}, c, row.get(uc))
	if err != nil {
		return err
	}
	v, err := answerAs[*E](ans, "get "+row.noun)
	if err != nil {
		return err
	}
	if v == nil {
		return slotstore.Errorf(slotstore.CodeNotFound, "user %q has no %s %s channel %d/%q", uc.UID, row.noun, row.of, uc.ChannelType, uc.ChannelID)
	}
	a.writeJSON(w, r, http.StatusOK, row.out(v))
	return nil
}
