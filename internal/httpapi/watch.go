package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// GET /v1/watch: the change feed as Server-Sent Events (issue 27, ADR 0016).
//
// A watch names one or more resources and, optionally, what of them: a
// uid, a channel, a business key or a key prefix. It covers the hash slots
// those live in — one when the filter names a route key, all 256 when not —
// and its position is a watch.Cursor over them, sent as every event's SSE
// id, so that an EventSource that reconnects resumes with Last-Event-ID on
// any node. An event holds the changes of one command in one slot (never
// split), in sequence order per slot; changes the filter does not want are
// skipped, but still move the cursor. A progress event (the cursor, no
// change) comes at the start and every progress interval while the stream
// has delivered everything this node has applied of its slots.
//
// A stream ends with an error event (the error JSON and the cursor to
// resume from): slow_consumer when the watcher fell Config.Buffer records
// behind, compacted when a position passed out of retention while it was
// read, route_not_ready when a slot is between groups or left this node.
// Before the stream starts the same are plain answers: 410 compacted, 429
// rate_limited above the node's watcher bound, 503 route_not_ready.

// watchError turns what ended (or refused) a stream into the error shown.
func watchError(err error) *slotstore.Error {
	switch {
	case errors.Is(err, watch.ErrCompacted):
		return &slotstore.Error{Code: slotstore.CodeCompacted, Err: err,
			Message: "the position is older than the change log keeps: list the resource again and watch from the position the list answers"}
	case errors.Is(err, watch.ErrSlowConsumer):
		return &slotstore.Error{Code: slotstore.CodeSlowConsumer, Err: err,
			Message: "the watcher fell too far behind: resume from this event's id"}
	case errors.Is(err, watch.ErrTooManyWatchers):
		return &slotstore.Error{Code: slotstore.CodeRateLimited, Err: err, RetryAfter: time.Second,
			Message: "this node serves as many watchers as it may: retry later or on another node"}
	case errors.Is(err, watch.ErrNotLinearizable):
		return &slotstore.Error{Code: slotstore.CodeFailedPrecondition, Err: err,
			Message: "this node cannot start a watch linearizably: start without linearizable=true"}
	case errors.Is(err, watch.ErrUnavailable), errors.Is(err, watch.ErrClosed):
		return &slotstore.Error{Code: slotstore.CodeRouteNotReady, Err: err, RetryAfter: time.Second,
			Message: "a hash slot of the watch is not served on this node now: resume from the cursor, here later or on another node"}
	}
	return toError(err)
}

// hdrWatchCursor carries a listing's position to watch from (list, then
// watch): the heads of the hash slots it read.
const hdrWatchCursor = "X-Watch-Cursor"

// watchFrom is the position a listing of slots is watched from: their
// heads on this node, taken before the listing reads, so that a watch from
// it misses nothing the listing does not show (it may repeat what it
// shows). "" when a slot has no local replica now. The listing sets it as
// its hdrWatchCursor once it answers.
func (a *api) watchFrom(r *http.Request, slots ...slotstore.HashSlot) string {
	c, err := watch.Now(r.Context(), a.be.Watches().Log, slots...)
	if err != nil {
		return ""
	}
	return c.String()
}

// setWatchCursor sets a listing's hdrWatchCursor (none when pos is "").
func setWatchCursor(w http.ResponseWriter, pos string) {
	if pos != "" {
		w.Header().Set(hdrWatchCursor, pos)
	}
}

// openWatch opens sp's stream from its cursor, or from now (after the
// slots' groups caught up, when linearizable), ringing bell (nil: its own
// channel), and polls it once before anything is answered: a compacted
// position is a plain 410. start is the position before what that poll
// returned (Poll moves the cursor past it), the first mark to send: a mark
// is never ahead of what was delivered. The error is the one to answer.
func (a *api) openWatch(ctx context.Context, sp *watchSpec, bell *watch.Bell) (st *watch.Stream, start watch.Cursor, first []watch.Record, _ error) {
	src := a.be.Watches()
	from := sp.cursor
	if from == nil {
		now := watch.Now
		if sp.linearizable {
			now = watch.NowLinearizable
		}
		c, err := now(ctx, src.Log, sp.slots...)
		if err != nil {
			return nil, watch.Cursor{}, nil, watchError(err)
		}
		from = &c
	}
	st, err := watch.OpenRinging(src.Hub, src.Log, *from, sp.filter(), bell)
	if err != nil {
		return nil, watch.Cursor{}, nil, watchError(err)
	}
	start = st.Cursor()
	if first, err = st.Poll(ctx); err != nil {
		st.Close()
		return nil, watch.Cursor{}, nil, watchError(err)
	}
	return st, start, first, nil
}

// watchStream is GET /v1/watch.
func (a *api) watchStream(w http.ResponseWriter, r *http.Request) error {
	sp, err := parseWatch(r)
	if err != nil {
		return err
	}
	a.metrics.watchStreams.Inc()
	defer a.metrics.watchStreams.Dec()
	if sp.routes {
		return a.routesStream(w, r, sp)
	}
	ctx := r.Context()
	st, start, first, err := a.openWatch(ctx, sp, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	s := startSSE(w, a.metrics)
	if err := s.send("progress", start, progressJSON{TimeMs: time.Now().UnixMilli()}); err != nil {
		return nil // the client is gone
	}
	tick := time.NewTicker(sp.progress)
	defer tick.Stop()
	recs := first
	for {
		for recs != nil {
			ev, err := sp.event(recs)
			if err != nil {
				a.log.Error("httpapi: watch", "err", err)
				s.fail(st.Cursor(), toError(err))
				return nil
			}
			if ev != nil {
				if s.send("change", st.Cursor(), ev) != nil {
					return nil
				}
			}
			if recs, err = st.Poll(ctx); err != nil {
				s.fail(st.Cursor(), watchError(err))
				return nil
			}
		}
		mark := false
		select {
		case <-ctx.Done():
			return nil
		case <-a.stopping:
			s.fail(st.Cursor(), slotstore.Errorf(slotstore.CodeRouteNotReady, "this node is shutting down: resume on another node"))
			return nil
		case <-st.Ready():
		case <-tick.C:
			mark = true
		}
		// A mark polls first: the hub moves a position past what the
		// filter does not want without waking the stream, so the poll
		// brings the cursor up to date.
		if recs, err = st.Poll(ctx); err != nil {
			s.fail(st.Cursor(), watchError(err))
			return nil
		}
		if mark && recs == nil && st.CaughtUp() {
			if s.send("progress", st.Cursor(), progressJSON{TimeMs: time.Now().UnixMilli()}) != nil {
				return nil
			}
		}
	}
}
