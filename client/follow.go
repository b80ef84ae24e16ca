package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Following a watch (GET /v1/watch) the way the server means it to be
// followed: resume from the last event's id after every disconnect, on
// the same node or another, until the caller stops.

// FollowEvent is one change event as Follow hands it on: the changes one
// command made in one hash slot (WatchEvent, generated from the spec's
// schema of the event's data) and the position after them.
type FollowEvent struct {
	WatchEvent
	Cursor string // where to resume after this event
}

// FollowOptions tune Follow.
type FollowOptions struct {
	// From is the position to start after (an event's Cursor, a listing's
	// X-Watch-Cursor); "" starts at what the serving node has applied.
	From string
	// Servers are other nodes' base URLs, tried in turn after this
	// client's own when a node cannot serve.
	Servers []string
	// MaxBackoff bounds the wait between attempts (default 5 s; the first
	// wait is 100 ms, doubling, back to it after an event).
	MaxBackoff time.Duration
	// Progress, if set, is called with the cursor of every progress event
	// (the first: where the watch starts).
	Progress func(cursor string)
	// Watcher, if set, carries the follow on its multiplexed stream with
	// the others it carries (Watcher.Follow); Servers and MaxBackoff are
	// then the Watcher's.
	Watcher *Watcher
}

// WatchError ends Follow when resuming cannot mend what went wrong: the
// position left retention (compacted: list again and follow from the
// listing's X-Watch-Cursor), or the request is refused (invalid_argument,
// permission_denied, …). Cursor is the last position given.
type WatchError struct {
	Status  int
	Code    ErrorCode
	Message string
	Cursor  string
}

func (e *WatchError) Error() string {
	return fmt.Sprintf("client: watch: %d %s: %s", e.Status, e.Code, e.Message)
}

// Follow watches params, calling handle with every change event in order,
// and resumes from the last position after a disconnect, a node that stops,
// a slow_consumer or route_not_ready cut and retryable refusals (429,
// 503), on this client's server or the next of opts.Servers, waiting a
// bounded back-off between attempts. It returns ctx's error when ctx ends,
// handle's error, or a *WatchError. Every change is handed to handle once:
// the server never repeats one after a position.
func (c *Client) Follow(ctx context.Context, params *WatchParams, opts FollowOptions, handle func(FollowEvent) error) error {
	if opts.Watcher != nil {
		return opts.Watcher.Follow(ctx, params, opts, handle)
	}
	servers := append([]string{c.Server}, opts.Servers...)
	maxWait := opts.MaxBackoff
	if maxWait <= 0 {
		maxWait = 5 * time.Second
	}
	hc := streamingDoer(c.Client)
	cursor, wait := opts.From, 100*time.Millisecond
	for attempt := 0; ; attempt++ {
		delivered, err := c.followOnce(ctx, hc, servers[attempt%len(servers)], params, &cursor, opts.Progress, handle)
		var we *WatchError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &we) && !retryableWatch(we):
			we.Cursor = cursor
			return we
		}
		var he handlerError
		if errors.As(err, &he) {
			return he.err
		}
		if delivered {
			wait = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}

// handlerError carries handle's error out of followOnce: Follow returns it
// as it is.
type handlerError struct{ err error }

func (e handlerError) Error() string { return e.err.Error() }

func retryableWatch(e *WatchError) bool {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return retryableWatchCode(e.Code)
}

// streamingDoer is hc without a whole-request timeout (WithTLS sets one,
// which would cut every stream).
func streamingDoer(hc HttpRequestDoer) HttpRequestDoer {
	if h, ok := hc.(*http.Client); ok && h.Timeout > 0 {
		cp := *h
		cp.Timeout = 0
		return &cp
	}
	return hc
}

// followOnce runs one connection; it reports whether it delivered a change.
func (c *Client) followOnce(ctx context.Context, hc HttpRequestDoer, server string, params *WatchParams, cursor *string,
	progress func(string), handle func(FollowEvent) error) (delivered bool, _ error) {
	req, err := NewWatchRequest(server, params)
	if err != nil {
		return false, &WatchError{Code: ErrorCodeInvalidArgument, Message: err.Error()}
	}
	req = req.WithContext(ctx)
	if *cursor != "" {
		req.Header.Set("Last-Event-ID", *cursor)
	}
	if err := c.applyEditors(ctx, req, nil); err != nil {
		return false, &WatchError{Code: ErrorCodeInvalidArgument, Message: err.Error()}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return false, watchErrorOf(resp.StatusCode, body)
	}
	err = ReadSSE(resp.Body, func(ev SSEEvent) error {
		switch ev.Event {
		case "change":
			fe := FollowEvent{Cursor: ev.ID}
			if err := json.Unmarshal(ev.Data, &fe.WatchEvent); err != nil {
				return fmt.Errorf("client: watch: event %q: %w", ev.Data, err)
			}
			if err := handle(fe); err != nil {
				return handlerError{err}
			}
			*cursor, delivered = ev.ID, true
		case "progress":
			*cursor = ev.ID
			if progress != nil {
				progress(ev.ID)
			}
		case "error":
			*cursor = ev.ID
			return watchErrorOf(0, ev.Data)
		}
		return nil
	})
	return delivered, err // nil: the stream ended, resume
}

// watchErrorOf reads the error JSON of a refusal or an error event.
func watchErrorOf(status int, body []byte) *WatchError {
	var e ErrorBody
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" {
		return &WatchError{Status: status, Code: ErrorCodeInternal, Message: strings.TrimSpace(string(body))}
	}
	return &WatchError{Status: status, Code: e.Error.Code, Message: e.Error.Message}
}
