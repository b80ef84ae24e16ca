package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

// userRoutes serves /v1/users.
type userRoutes struct{ *api }

// userRequest is the body of POST /v1/users and PUT /v1/users/{uid}. Extra
// is any JSON value, kept verbatim.
type userRequest struct {
	UID    string          `json:"uid" validate:"required,uid"`
	Name   string          `json:"name" validate:"maxbytes=1024"`
	Avatar string          `json:"avatar" validate:"maxbytes=2048"`
	Extra  json.RawMessage `json:"extra" validate:"maxbytes=65536"`
}

func (u *userRequest) user() meta.User {
	return meta.User{UID: u.UID, Name: u.Name, Avatar: u.Avatar, Extra: string(u.Extra)}
}

// userJSON is a user as the API shows it.
type userJSON struct {
	UID         string          `json:"uid"`
	Name        string          `json:"name"`
	Avatar      string          `json:"avatar"`
	Extra       json.RawMessage `json:"extra"`
	CreatedAtMs int64           `json:"created_at_ms"`
	UpdatedAtMs int64           `json:"updated_at_ms"`
	Revision    uint64          `json:"revision"`
}

func userOut(u *meta.User) userJSON {
	extra := json.RawMessage(u.Extra)
	switch {
	case len(extra) == 0:
		extra = json.RawMessage("null")
	case !json.Valid(extra): // not written through this API: show it as a string
		extra, _ = json.Marshal(u.Extra)
	}
	return userJSON{
		UID: u.UID, Name: u.Name, Avatar: u.Avatar, Extra: extra,
		CreatedAtMs: u.CreatedAtMs, UpdatedAtMs: u.UpdatedAtMs, Revision: u.Revision,
	}
}

// resultUser decodes the user a successful command wrote.
func resultUser(res meta.Result) (*meta.User, error) {
	if len(res.Value) == 0 {
		return nil, internalf("the write succeeded but its result carries no user")
	}
	u, err := meta.DecodeUser(res.Value)
	if err != nil {
		return nil, slotstore.Wrap(slotstore.CodeInternal, err, "decoding the written user")
	}
	return u, nil
}

// createUser is POST /v1/users: 201, or 409 conflict if the uid exists.
func (a userRoutes) createUser(w http.ResponseWriter, r *http.Request) error {
	var req userRequest
	idemKey, f, err := a.writeBody(w, r, &req)
	if err != nil {
		return err
	}
	res, err := a.propose(w, r, target{req.UID, f}, idemKey, &meta.CreateUser{User: req.user()})
	if err != nil {
		return err
	}
	u, err := resultUser(res)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/users/"+url.PathEscape(u.UID))
	a.writeJSON(w, r, http.StatusCreated, userOut(u))
	return nil
}

// putUser is PUT /v1/users/{uid}: create or replace. A uid in the body must
// equal the path's.
func (a userRoutes) putUser(w http.ResponseWriter, r *http.Request) error {
	uid, err := pathParam(r, "uid", uidProblem)
	if err != nil {
		return err
	}
	idemKey, f, err := writeHeaders(r)
	if err != nil {
		return err
	}
	var req userRequest
	req.UID = uid
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	if req.UID != uid {
		return invalidField("uid", "must equal the uid in the path")
	}
	res, err := a.propose(w, r, target{uid, f}, idemKey, &meta.PutUser{User: req.user()})
	if err != nil {
		return err
	}
	u, err := resultUser(res)
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, userOut(u))
	return nil
}

// getUser is GET /v1/users/{uid}.
func (a userRoutes) getUser(w http.ResponseWriter, r *http.Request) error {
	uid, err := pathParam(r, "uid", uidProblem)
	if err != nil {
		return err
	}
	c, f, err := readParams(r)
	if err != nil {
		return err
	}
	u, err := read(a.api, w, r, target{uid, f}, c, &meta.GetUser{HashSlot: slotstore.HashSlotOfString(uid), UID: uid})
	if err != nil {
		return err
	}
	if u == nil {
		return slotstore.Errorf(slotstore.CodeNotFound, "user %q not found", uid)
	}
	a.writeJSON(w, r, http.StatusOK, userOut(u))
	return nil
}

// deleteUser is DELETE /v1/users/{uid}: 204, or 404.
func (a userRoutes) deleteUser(w http.ResponseWriter, r *http.Request) error {
	uid, err := pathParam(r, "uid", uidProblem)
	if err != nil {
		return err
	}
	return a.remove(w, r, uid, &meta.DeleteUser{UID: uid})
}
