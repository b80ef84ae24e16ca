package routed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/slotmeta/slotmeta/client"
)

// followRoutes follows the route stream (GET /v1/watch?resource=routes) of
// one node after another until ctx ends: every routes event replaces the
// view's table and leaders, so a leader change reaches the client as soon
// as the serving node learns it, not at the next stale answer. A stream
// that ends or fails is opened again on the next node after a bounded
// back-off (100 ms doubling to 5 s, back to 100 ms after an event).
func (c *Client) followRoutes(ctx context.Context) {
	wait, avoid := 100*time.Millisecond, ""
	for ctx.Err() == nil {
		u := c.anyNode(avoid)
		got, err := c.followRoutesOnce(ctx, u)
		if ctx.Err() != nil {
			return
		}
		c.cfg.Logger.Debug("routed: route stream ended; opening it again", "node", u.Host, "err", err)
		avoid = u.Host
		if got {
			wait = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// errStreamQuiet ends a stream that sent nothing, not even a progress
// event, for three progress intervals: its node may be cut off.
var errStreamQuiet = errors.New("routed: the route stream went quiet")

// routeStreamProgress is the progress interval asked of the stream.
const routeStreamProgress = 2 * time.Second

func (c *Client) followRoutesOnce(ctx context.Context, u *url.URL) (got bool, _ error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	q := url.Values{"resource": {"routes"}, "progress_interval_ms": {fmt.Sprint(routeStreamProgress.Milliseconds())}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.JoinPath("/v1/watch").String()+"?"+q.Encode(), nil)
	if err != nil {
		return false, err
	}
	for _, e := range c.editors {
		if err := e(ctx, req); err != nil {
			return false, err
		}
	}
	// A watchdog from the start: a node that never answers (a cut link),
	// or a stream silent for three progress intervals, is left.
	quiet := time.AfterFunc(3*routeStreamProgress, func() { cancel(errStreamQuiet) })
	defer quiet.Stop()
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return false, statusErr(resp.StatusCode, b)
	}
	err = client.ReadSSE(resp.Body, func(ev client.SSEEvent) error {
		quiet.Reset(3 * routeStreamProgress)
		if ev.Event != "routes" {
			return nil
		}
		var r client.Routes
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			return fmt.Errorf("routed: routes event: %w", err)
		}
		c.view.learnRoutes(&r)
		c.checkNodes()
		c.stats.streamEvents.Add(1)
		got = true
		return nil
	})
	if cause := context.Cause(ctx); errors.Is(cause, errStreamQuiet) {
		return got, cause
	}
	return got, err
}
