package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/client"
)

// Watchers beside the load (issue 27's target: 1 000 watchers must not
// slow writes by more than a tenth): with -watchers N, N watches of one
// business key each — sbw.RUN.0 … sbw.RUN.(N-1), spread over the
// endpoints — run through the whole run, and the kv-put-watched workload
// writes those keys (over -keys of them), so every write with a watcher is
// delivered to exactly one. Each delivery's delay is the watcher's clock
// minus the change's time_ms (the proposing leader's clock: one machine).

// watchKey is the i-th key of the watched workload.
func watchKey(run string, i int) string { return fmt.Sprintf("sbw.%s.%d", run, i) }

// watchers holds the streams and what they measured.
type watchers struct {
	measureFrom time.Time
	mu          sync.Mutex
	delays      *hist
	delivered   uint64
	ended       map[string]uint64 // why streams ended early (error events, EOF)
	wg          sync.WaitGroup
	close       func() // ends what the watchers hold open (nil: nothing)
}

// startWatchers opens n streams and waits until each has started; they
// run until ctx ends.
func startWatchers(ctx context.Context, cfg *Config, n int, measureFrom time.Time) (*watchers, error) {
	ws := &watchers{measureFrom: measureFrom, delays: newHist(), ended: map[string]uint64{}}
	if cfg.WatchStreams > 0 {
		return ws, ws.startMultiplexed(ctx, cfg, n)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 0, DisableCompression: true}}
	started := make(chan error, n)
	for i := range n {
		ep := cfg.Endpoints[i%len(cfg.Endpoints)]
		q := url.Values{"resource": {"kv"}, "key": {watchKey(cfg.RunID, i)}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep+"/v1/watch?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		if cfg.Token != "" {
			req.Header.Set("Authorization", "Bearer "+cfg.Token)
		}
		// Labelled as the load generator's (bench/profile.sh tells the
		// servers' samples from the client's by it).
		ws.wg.Go(func() {
			pprof.Do(ctx, pprof.Labels("slotbench", "client"), func(context.Context) { ws.follow(client, req, started) })
		})
	}
	for range n {
		select {
		case err := <-started:
			if err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return ws, nil
}

// startMultiplexed follows n keys over cfg.WatchStreams multiplexed
// streams per endpoint (client.Watcher), the watchers spread over them,
// and waits until each watch has started.
func (ws *watchers) startMultiplexed(ctx context.Context, cfg *Config, n int) error {
	var muxes []*client.Watcher
	for _, ep := range cfg.Endpoints {
		var opts []client.ClientOption
		if cfg.Token != "" {
			opts = append(opts, client.WithBearerToken(cfg.Token))
		}
		c, err := client.NewClient(ep, opts...)
		if err != nil {
			return err
		}
		for range cfg.WatchStreams {
			// Made under the load generator's label: the Watcher's own
			// goroutines (the stream's reader, its adds) carry it too.
			pprof.Do(ctx, pprof.Labels("slotbench", "client"), func(context.Context) {
				muxes = append(muxes, client.NewWatcher(c, client.WatcherOptions{}))
			})
		}
	}
	ws.close = func() {
		for _, w := range muxes {
			w.Close()
		}
	}
	started := make(chan struct{}, n)
	for i := range n {
		w := muxes[i%len(muxes)]
		params := &client.WatchParams{Resource: "kv", Key: new(watchKey(cfg.RunID, i))}
		var once sync.Once
		opts := client.FollowOptions{Watcher: w, Progress: func(string) { once.Do(func() { started <- struct{}{} }) }}
		ws.wg.Go(func() {
			pprof.Do(ctx, pprof.Labels("slotbench", "client"), func(ctx context.Context) {
				err := w.Follow(ctx, params, opts, func(ev client.FollowEvent) error {
					if now := time.Now(); now.After(ws.measureFrom) {
						ws.mu.Lock()
						ws.delays.record(now.Sub(time.UnixMilli(ev.TimeMs)))
						ws.delivered++
						ws.mu.Unlock()
					}
					return nil
				})
				if ctx.Err() == nil && !errors.Is(err, client.ErrWatcherClosed) {
					ws.end(err.Error())
				}
			})
		})
	}
	for range n {
		select {
		case <-started:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// follow reads one stream; it reports on started once (nil when the
// stream began).
func (ws *watchers) follow(client *http.Client, req *http.Request, started chan<- error) {
	resp, err := client.Do(req)
	if err != nil {
		started <- fmt.Errorf("watch: %w", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		started <- fmt.Errorf("watch: %s", resp.Status)
		return
	}
	started <- nil
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 4<<10), 1<<20) // grows as needed: 1 000 watchers need not hold 64 MiB
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: ") && event == "change":
			now := time.Now()
			var ev struct {
				TimeMs int64 `json:"time_ms"`
			}
			if json.Unmarshal([]byte(line[len("data: "):]), &ev) == nil && now.After(ws.measureFrom) {
				ws.mu.Lock()
				ws.delays.record(now.Sub(time.UnixMilli(ev.TimeMs)))
				ws.delivered++
				ws.mu.Unlock()
			}
		case strings.HasPrefix(line, "data: ") && event == "error":
			ws.end(line[len("data: "):])
			return
		}
	}
	if req.Context().Err() == nil {
		ws.end("EOF")
	}
}

// stop ends the watchers' multiplexed streams, if any.
func (ws *watchers) stop() {
	if ws.close != nil {
		ws.close()
	}
}

func (ws *watchers) end(why string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(why) > 80 {
		why = why[:80]
	}
	ws.ended[why]++
}

// await returns once n changes were delivered, or after limit.
func (ws *watchers) await(n uint64, limit time.Duration) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); <-tick.C {
		ws.mu.Lock()
		done := ws.delivered >= n
		ws.mu.Unlock()
		if done {
			return
		}
	}
}

// watchStats is what the watchers measured, in a Result.
type watchStats struct {
	Watchers  int               `json:"watchers"`
	Delivered uint64            `json:"delivered"`
	Delay     latency           `json:"delivery_delay"`
	Ended     map[string]uint64 `json:"ended,omitempty"`
}

func (ws *watchers) stats(n int) *watchStats {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return &watchStats{Watchers: n, Delivered: ws.delivered, Delay: ws.delays.summary(), Ended: ws.ended}
}
