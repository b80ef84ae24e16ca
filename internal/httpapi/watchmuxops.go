package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// The requests that add watches to a multiplexed stream and cancel them
// (watchmux.go).

// muxAddJSON is the body of POST /v1/watch/stream/{stream_id}: at most
// 1 000 watches a request.
type muxAddJSON struct {
	Watches []muxWatchJSON `json:"watches" validate:"required,min=1,max=1000,dive"`
}

// muxWatchJSON is one watch as a stream takes it: GET /v1/watch's
// parameters as fields, the cursor to resume from, and the id its client
// chose (unique in the stream while the watch lasts).
type muxWatchJSON struct {
	WatchID      uint64  `json:"watch_id" validate:"required"`
	Resource     string  `json:"resource" validate:"required"`
	UID          string  `json:"uid,omitempty"`
	ChannelType  int     `json:"channel_type,omitempty"`
	ChannelID    string  `json:"channel_id,omitempty"`
	Key          *string `json:"key,omitempty"`
	Prefix       *string `json:"prefix,omitempty"`
	Prev         bool    `json:"prev,omitempty"`
	Linearizable bool    `json:"linearizable,omitempty"`
	Cursor       string  `json:"cursor,omitempty"`
}

// query is the watch as GET /v1/watch's query, for parseWatchQuery.
func (j muxWatchJSON) query() url.Values {
	q := url.Values{"resource": {j.Resource}}
	set := func(name, v string) {
		if v != "" {
			q.Set(name, v)
		}
	}
	set("uid", j.UID)
	set("channel_id", j.ChannelID)
	if j.ChannelType != 0 {
		q.Set("channel_type", strconv.Itoa(j.ChannelType))
	}
	if j.Key != nil {
		q.Set("key", *j.Key)
	}
	if j.Prefix != nil {
		q.Set("prefix", *j.Prefix)
	}
	if j.Prev {
		q.Set("prev", "true")
	}
	if j.Linearizable {
		q.Set("linearizable", "true")
	}
	return q
}

// muxAddedJSON answers an add: each watch's start position, or why it was
// refused, in the request's order.
type muxAddedJSON struct {
	Watches []muxPositionJSON `json:"watches"`
}

// addToMux is POST /v1/watch/stream/{stream_id}. A watch that is not valid
// refuses the whole request (400, nothing added); one that cannot start
// (its position compacted, its slots not served here now, the node's
// watcher bound, its id in use) is answered with its error and the rest
// are added. Each added watch's changes may reach the stream before this
// answer does: its client knows it by the id it chose.
func (a *api) addToMux(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "stream_id", streamIDProblem)
	if err != nil {
		return err
	}
	var body muxAddJSON
	if err := a.decode(w, r, &body); err != nil {
		return err
	}
	specs := make([]*watchSpec, len(body.Watches))
	seen := make(map[uint64]bool, len(body.Watches))
	for i, j := range body.Watches {
		if seen[j.WatchID] {
			return invalid("watches[%d]: watch_id %d is given twice", i, j.WatchID)
		}
		seen[j.WatchID] = true
		sp, err := parseWatchQuery(j.query(), j.Cursor)
		if err != nil {
			e := *toError(err)
			e.Message = fmt.Sprintf("watches[%d]: %s", i, e.Message)
			return &e
		}
		if sp.routes {
			return invalid("watches[%d]: the route table is watched alone: GET /v1/watch?resource=routes", i)
		}
		specs[i] = sp
	}
	ms, err := a.streams.get(id)
	if err != nil {
		return err
	}
	ctx := r.Context()
	out := make([]muxPositionJSON, len(specs))
	var opened []*muxWatch
	var at []int // opened[k] is the answer's at[k]
	for i, sp := range specs {
		wid := body.Watches[i].WatchID
		st, start, first, err := a.openWatch(ctx, sp, ms.bell)
		if err != nil {
			out[i] = muxPositionJSON{WatchID: wid, Error: new(errorJSONOf(toError(err)))}
			continue
		}
		out[i] = muxPositionJSON{WatchID: wid, Cursor: start.String()}
		opened = append(opened, &muxWatch{id: wid, sp: sp, st: st, first: first, told: out[i].Cursor})
		at = append(at, i)
	}
	if len(opened) > 0 {
		errs, err := ms.handOver(ctx, muxOp{add: opened})
		if err != nil {
			for _, mw := range opened {
				mw.st.Close()
			}
			return err
		}
		for k, e := range errs {
			if e != nil {
				opened[k].st.Close()
				out[at[k]] = muxPositionJSON{WatchID: opened[k].id, Error: new(errorJSONOf(toError(e)))}
			}
		}
	}
	a.writeJSON(w, r, http.StatusOK, muxAddedJSON{Watches: out})
	return nil
}

// cancelInMux is DELETE /v1/watch/stream/{stream_id}/{watch_id}: once
// answered, the stream sends nothing more of the watch (events already on
// their way may still arrive: a client drops those of ids it cancelled).
func (a *api) cancelInMux(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "stream_id", streamIDProblem)
	if err != nil {
		return err
	}
	text, err := pathParam(r, "watch_id", func(string) string { return "" })
	if err != nil {
		return err
	}
	wid, perr := strconv.ParseUint(text, 10, 64)
	if perr != nil || wid == 0 {
		return invalidField("watch_id", "must be a positive integer")
	}
	ms, err := a.streams.get(id)
	if err != nil {
		return err
	}
	errs, err := ms.handOver(r.Context(), muxOp{cancel: wid})
	if err != nil {
		return err
	}
	if errs[0] != nil {
		return errs[0]
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// streamIDProblem checks a stream id: 32 lower-case hex digits.
func streamIDProblem(id string) string {
	if len(id) != 32 {
		return "must be 32 hexadecimal digits (a stream's stream_id)"
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "must be 32 hexadecimal digits (a stream's stream_id)"
		}
	}
	return ""
}
