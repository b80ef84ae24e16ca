package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
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
	return userJSON{
		UID: u.UID, Name: u.Name, Avatar: u.Avatar, Extra: rawJSONOut(u.Extra),
		CreatedAtMs: u.CreatedAtMs, UpdatedAtMs: u.UpdatedAtMs, Revision: u.Revision,
	}
}

// userFromPath returns {uid}.
func userFromPath(r *http.Request) (string, error) { return pathParam(r, "uid", uidProblem) }

// userRow is a user: GET /v1/users/{uid}; DELETE: 204, or 404.
var userRow = row[string, meta.User, userJSON]{
	noun: "user", path: userFromPath, key: sameKey, decode: meta.DecodeUser, out: userOut,
	get: func(uid string) meta.For[*meta.User] {
		return &meta.GetUser{HashSlot: slotstore.HashSlotOfString(uid), UID: uid}
	},
	missing:  func(uid string) error { return notFound("user %q not found", uid) },
	del:      func(uid string) meta.Command { return &meta.DeleteUser{UID: uid} },
	location: func(u *meta.User) string { return "/v1/users/" + url.PathEscape(u.UID) },
}

// createUser is POST /v1/users: 201, or 409 conflict if the uid exists.
func (a userRoutes) createUser(w http.ResponseWriter, r *http.Request) error {
	var req userRequest
	return userRow.create(a.api, w, r, &req, func() (string, meta.Command, error) {
		return req.UID, &meta.CreateUser{User: req.user()}, nil
	})
}

// putUser is PUT /v1/users/{uid}: create or replace. A uid in the body must
// equal the path's.
func (a userRoutes) putUser(w http.ResponseWriter, r *http.Request) error {
	uid, err := userFromPath(r)
	if err != nil {
		return err
	}
	idemKey, f, err := writeHeaders(r)
	if err != nil {
		return err
	}
	req := userRequest{UID: uid} // a body may leave the uid out
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
	return userRow.answer(a.api, w, r, http.StatusOK, res)
}
