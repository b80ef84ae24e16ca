package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// pluginRoutes serves a user's plugin bindings (/v1/users/{uid}/plugins)
// and the users bound to a plugin (/v1/plugins). A binding belongs to an
// existing user (404 otherwise) and is deleted with it.
type pluginRoutes struct{ *api }

// pluginRequest is the optional body of PUT /v1/users/{uid}/plugins/{plugin_no}.
type pluginRequest struct {
	Config json.RawMessage `json:"config" validate:"maxbytes=16384"`
}

// pluginJSON is a plugin binding as the API shows it.
type pluginJSON struct {
	UID         string          `json:"uid"`
	PluginNo    string          `json:"plugin_no"`
	Config      json.RawMessage `json:"config"`
	CreatedAtMs int64           `json:"created_at_ms"`
	UpdatedAtMs int64           `json:"updated_at_ms"`
	Revision    uint64          `json:"revision"`
}

func pluginOut(b *meta.PluginBinding) pluginJSON {
	return pluginJSON{UID: b.UID, PluginNo: b.PluginNo, Config: rawJSONOut(b.Config),
		CreatedAtMs: b.CreatedAtMs, UpdatedAtMs: b.UpdatedAtMs, Revision: b.Revision}
}

// rawJSONIn stores an opaque JSON value verbatim; null is the same as unset.
func rawJSONIn(v json.RawMessage) string {
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return ""
	}
	return string(v)
}

// rawJSONOut shows a stored opaque JSON value: null when unset, a JSON
// string when the stored bytes are not JSON (not written through this API).
func rawJSONOut(s string) json.RawMessage {
	switch {
	case s == "":
		return json.RawMessage("null")
	case !json.Valid([]byte(s)):
		b, _ := json.Marshal(s)
		return b
	}
	return json.RawMessage(s)
}

// hasBody reports whether r has a non-empty body, whatever its framing
// (Content-Length or chunked). It keeps the body readable.
func hasBody(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return false
	}
	br := bufio.NewReader(r.Body)
	if _, err := br.Peek(1); err == io.EOF {
		return false
	} // another error is decode's to report
	r.Body = struct {
		io.Reader
		io.Closer
	}{br, r.Body}
	return true
}

// pluginNoProblem says what is wrong with a plugin number, or "" if
// nothing: 1–64 bytes of [A-Za-z0-9_.-], and not "." or "..".
func pluginNoProblem(s string) string {
	if len(s) == 0 || len(s) > meta.MaxPluginNoBytes {
		return fmt.Sprintf("must be 1 to %d bytes", meta.MaxPluginNoBytes)
	}
	if s == "." || s == ".." {
		return `must not be "." or ".."`
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return "must hold only A-Z, a-z, 0-9, '_', '.' and '-'"
		}
	}
	return ""
}

// pluginKey names a plugin binding: its user and plugin.
type pluginKey struct{ uid, plugin string }

// pluginFromPath parses {uid} and {plugin_no}.
func pluginFromPath(r *http.Request) (pluginKey, error) {
	uid, err := userFromPath(r)
	if err != nil {
		return pluginKey{}, err
	}
	plugin, err := pathParam(r, "plugin_no", pluginNoProblem)
	return pluginKey{uid, plugin}, err
}

// pluginRow is a plugin binding: DELETE
// /v1/users/{uid}/plugins/{plugin_no}: 204, or 404.
var pluginRow = row[pluginKey, meta.PluginBinding, pluginJSON]{
	noun: "plugin binding", path: pluginFromPath, key: func(k pluginKey) string { return k.uid },
	decode: meta.DecodePluginBinding, out: pluginOut,
	del: func(k pluginKey) meta.Command { return &meta.DeletePlugin{UID: k.uid, PluginNo: k.plugin} },
}

// putPlugin is PUT /v1/users/{uid}/plugins/{plugin_no} with an optional
// body {"config": <any JSON>}: bind, or replace the binding's config (200).
// 404 when the user does not exist; 409 when the user already has
// meta.MaxPluginsPerUser bindings.
func (a pluginRoutes) putPlugin(w http.ResponseWriter, r *http.Request) error {
	var req pluginRequest
	return pluginRow.write(a.api, w, r, http.StatusOK, optionalBody{&req, hasBody}, func(k pluginKey) (meta.Command, error) {
		return &meta.PutPlugin{UID: k.uid, PluginNo: k.plugin, Config: rawJSONIn(req.Config)}, nil
	})
}

// listUserPlugins is GET /v1/users/{uid}/plugins?cursor=&limit=: the user's
// bindings in plugin order; 404 when the user does not exist.
func (a pluginRoutes) listUserPlugins(w http.ResponseWriter, r *http.Request) error {
	uid, lq, after, err := userKeyedList(r, tagUserPlugins, pluginNoProblem)
	if err != nil {
		return err
	}
	q := &meta.ListUserPlugins{HashSlot: slotstore.HashSlotOfString(uid), UID: uid, AfterPlugin: after, Limit: lq.limit}
	p, err := readWatchedPage(a.api, w, r, uid, lq, q, func() error { return userRow.missing(uid) })
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, pageOf(p.Bindings, p.More, pluginOut,
		func(last *meta.PluginBinding) string { return packCursor(tagUserPlugins, []byte(last.PluginNo)) }))
	return nil
}

// listPluginUsers is GET /v1/plugins/{plugin_no}/users?cursor=&limit=&consistency=:
// the bindings to a plugin across every hash slot, in (hash slot, uid)
// order, walked like GET /v1/users (slotWalk). An unknown plugin lists
// nothing.
func (a pluginRoutes) listPluginUsers(w http.ResponseWriter, r *http.Request) error {
	plugin, err := pathParam(r, "plugin_no", pluginNoProblem)
	if err != nil {
		return err
	}
	return slotWalk[meta.PluginPage, *meta.PluginBinding, pluginJSON]{name: "ScanPluginUsers", out: pluginOut, valid: uidProblem,
		keyOf: func(b *meta.PluginBinding) string { return b.UID },
		query: func(run slotRun) meta.For[*meta.PluginPage] {
			return &meta.ScanPluginUsers{PluginNo: plugin, FromSlot: run.from, ToSlot: run.to, AfterUID: run.after, Limit: run.want}
		}, rows: func(p *meta.PluginPage) ([]*meta.PluginBinding, bool) { return p.Bindings, p.More }}.serve(a.api, w, r)
}
