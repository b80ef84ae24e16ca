package routed

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// systemUIDsRouteKey is the route key of every system UID (the server's
// meta.SystemUIDsRouteKey): they are one hash slot.
const systemUIDsRouteKey = "__slotmeta_system_uids__"

// request is what the client needs to know of a request before it sends
// it: its route key (none for a request that no single group serves) and
// whether sending it twice is harmless.
type request struct {
	key       string
	keyed     bool
	retrySafe bool // a second delivery applies nothing new
}

// classify reads req's route key from its path the way the server routes
// it (TestRouteKeysMatchTheServer holds the two together):
//
//	/v1/kv/{key}…                      the key
//	/v1/users/{uid}…                   the uid (devices, plugins, memberships, cmd bindings are the user's)
//	/v1/channels/{type}/{id}…          the channel id (every type with one id shares a slot)
//	/v1/system-uids…                   one reserved key
//	POST /v1/users, POST /v1/channels  the body's uid / channel_id
//
// Listings across slots, batches, the watch and the cluster's paths have
// no route key: any node serves them.
//
// A GET or HEAD is always safe to send again; a write is when it carries an
// Idempotency-Key and its path honours it (every data path; the cluster's
// operations do not take one).
func classify(req *http.Request) request {
	var r request
	segs := strings.Split(strings.TrimPrefix(req.URL.EscapedPath(), "/"), "/")
	cluster := len(segs) >= 2 && segs[0] == "v1" && segs[1] == "cluster"
	switch {
	case req.Method == http.MethodGet || req.Method == http.MethodHead:
		r.retrySafe = true
	case !cluster && req.Header.Get("Idempotency-Key") != "":
		r.retrySafe = true
	}
	if len(segs) < 2 || segs[0] != "v1" {
		return r
	}
	pathKey := func(i int) {
		if len(segs) > i && segs[i] != "" {
			if k, err := url.PathUnescape(segs[i]); err == nil {
				r.key, r.keyed = k, true
			}
		}
	}
	switch segs[1] {
	case "kv":
		pathKey(2)
	case "users":
		if len(segs) == 2 && req.Method == http.MethodPost {
			r.key, r.keyed = bodyMember(req, "uid")
		} else {
			pathKey(2)
		}
	case "channels":
		if len(segs) == 2 && req.Method == http.MethodPost {
			r.key, r.keyed = bodyMember(req, "channel_id")
		} else {
			pathKey(3)
		}
	case "system-uids":
		r.key, r.keyed = systemUIDsRouteKey, true
	}
	return r
}

// bodyMember reads the string member name of req's JSON body without
// consuming it (a copy from GetBody). A body it cannot read leaves the
// request unkeyed: the server answers it anyway.
func bodyMember(req *http.Request, name string) (string, bool) {
	if req.GetBody == nil {
		return "", false
	}
	body, err := req.GetBody()
	if err != nil {
		return "", false
	}
	defer body.Close()
	var m map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(body, 1<<20)).Decode(&m); err != nil {
		return "", false
	}
	var v string
	if json.Unmarshal(m[name], &v) != nil || v == "" {
		return "", false
	}
	return v, true
}
