package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The live tails follow the node's multiplexed watch stream (issue 49):
// a page's change tails are watches of one stream, and a change the
// stream reports makes its tail fetch its fragment at once instead of
// every 2 s. The browser reaches the stream through the console — its
// session cookie is scoped to /console and is never a credential of the
// API, and the token stays on the server — so the console forwards
//
//	GET  /console/stream              → GET  /v1/watch/stream
//	POST /console/stream/{stream_id}  → POST /v1/watch/stream/{stream_id}
//
// as new requests to the API (Config.API) that carry the session's token
// as a bearer token: the API checks it (read role), bounds the stream and
// its watches and answers its own errors. The POST passes the console's
// cross-origin guard first, as every console POST does. web/static/live.js
// opens the stream, adds the watches the page's tails name (data-watch,
// GET /v1/watch's parameters as JSON) and falls back to polling for a
// tail whose watch is refused or ends, and for all of them while the
// stream is down; a browser without JavaScript polls as before.

// streamPrefix is where the API serves its multiplexed watch stream.
const streamPrefix = "/v1/watch/stream"

// streamPages forwards the live tails' watch stream to the API.
type streamPages struct{ *console }

// forward serves /console/stream[/{stream_id}] as the API's stream route
// of the same rest, with the session's token.
func (sp streamPages) forward(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if sp.api == nil {
		http.Error(w, "this console has no API to follow changes through: its tails poll", http.StatusNotFound)
		return
	}
	r, ended := sp.sessions.WithSession(r)
	if ended {
		sp.dropCookie(w, r)
	}
	fwd := r.Clone(r.Context())
	fwd.Header.Del("Cookie") // the API takes no cookie: the token is the credential
	fwd.URL.Path, fwd.URL.RawPath = streamPrefix, ""
	if id := r.PathValue("stream_id"); id != "" {
		// Escaped: the id stays one segment of the path the API routes.
		fwd.URL.Path += "/" + id
		fwd.URL.RawPath = streamPrefix + "/" + url.PathEscape(id)
	}
	fwd.RequestURI = fwd.URL.RequestURI()
	sp.api.ServeHTTP(w, fwd)
}

// tailWatch is a tail's watch as data-watch carries it: the fields of a
// watch that POST /v1/watch/stream/{stream_id} takes, but for the id,
// which the page's script gives.
type tailWatch struct {
	Resource    string `json:"resource"`
	ChannelType int    `json:"channel_type,omitempty"`
	ChannelID   string `json:"channel_id,omitempty"`
}

// groupTailResources is every data resource a group's change tail shows.
const groupTailResources = "system_uids,users,devices,plugins,memberships,cmd_bindings,kv,channels,runtime,subscribers,denylist,allowlist"

// channelTailResources is what a channel's change tail shows: the rows a
// channel filter selects.
const channelTailResources = "channels,runtime,subscribers,denylist,allowlist"

// slotsAttr is slots as data-slots' value: "1,5,9".
func slotsAttr(slots []slotstore.HashSlot) string {
	parts := make([]string, len(slots))
	for i, s := range slots {
		parts[i] = strconv.Itoa(int(s))
	}
	return strings.Join(parts, ",")
}

// watchAttr is w as data-watch's value.
func watchAttr(w tailWatch) string {
	b, _ := json.Marshal(w) // strings and an int: never fails
	return string(b)
}
