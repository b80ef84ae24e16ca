package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// slotbench kvlist: how fast business keys are listed by prefix (GET
// /v1/kv, issue 54). It first writes -fill keys PREFIX000000000… through
// POST /v1/batch/kv/write (1 000 a request, -c at a time, the endpoints in
// turn; -fill 0 writes none; -list=false only writes), then lists every key with the prefix -c
// times at once, each listing page after page (-limit keys a page,
// -keys-only), and reports each listing's time, the keys listed a second
// over all of them, and the servers' CPU per 1 000 keys listed.
func kvListCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("slotbench kvlist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	eps := fs.String("endpoints", "http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083", "comma-separated base URLs (loopback only)")
	prefix := fs.String("prefix", "sbl.", "the keys' prefix")
	fill := fs.Int("fill", 0, "keys to write first")
	conc := fs.Int("c", 1, "listings at once (and fill workers)")
	limit := fs.Int("limit", 1000, "keys a page (1–1000)")
	keysOnly := fs.Bool("keys-only", false, "list keys and revisions only")
	valueSize := fs.Int("value-size", 100, "bytes of each written value")
	pids := fs.String("pids", "", "comma-separated server PIDs: their CPU seconds while listing")
	token := fs.String("token", os.Getenv("SLOTBENCH_TOKEN"), "bearer token (default $SLOTBENCH_TOKEN)")
	list := fs.Bool("list", true, "list after writing (-list=false: only write)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var endpoints []string
	for _, e := range strings.Split(*eps, ",") {
		if e = strings.TrimRight(strings.TrimSpace(e), "/"); e != "" {
			endpoints = append(endpoints, e)
		}
	}
	if err := loopbackOnly(endpoints); err != nil {
		return err
	}
	if len(endpoints) == 0 || *conc < 1 || *limit < 1 || *limit > 1000 || *fill < 0 || *valueSize < 1 || *valueSize > 65536 {
		return fmt.Errorf("want endpoints, -c >= 1, 1 <= -limit <= 1000, -fill >= 0, 1 <= -value-size <= 65536")
	}
	var serverPIDs []int
	for _, p := range strings.Split(*pids, ",") {
		if p = strings.TrimSpace(p); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 {
				return fmt.Errorf("-pids: %q is not a PID", p)
			}
			serverPIDs = append(serverPIDs, n)
		}
	}
	ctx := context.Background()
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: *conc + 4}}
	do := func(req *http.Request) ([]byte, error) {
		if *token != "" {
			req.Header.Set("Authorization", "Bearer "+*token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s %s: %d %.200s", req.Method, req.URL.Path, resp.StatusCode, b)
		}
		return b, err
	}

	if *fill > 0 {
		t0 := time.Now()
		value := strings.Repeat("v", *valueSize)
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, *conc)
		for w := range *conc {
			wg.Go(func() {
				for {
					from := int(next.Add(1000)) - 1000
					if from >= *fill {
						return
					}
					var body bytes.Buffer
					body.WriteString(`{"ops":[`)
					for i := from; i < min(from+1000, *fill); i++ {
						if i > from {
							body.WriteByte(',')
						}
						fmt.Fprintf(&body, `{"op":"put","key":"%s%09d","value":"%s"}`, *prefix, i, value)
					}
					body.WriteString(`]}`)
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoints[(w+from/1000)%len(endpoints)]+"/v1/batch/kv/write", &body)
					req.Header.Set("Content-Type", "application/json")
					if _, err := do(req); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return fmt.Errorf("fill: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %d keys %s… in %.1fs (%.0f keys/s)\n", *fill, *prefix, time.Since(t0).Seconds(), float64(*fill)/time.Since(t0).Seconds())
	}
	if !*list {
		return nil
	}

	cpu := func() float64 {
		var s float64
		for _, p := range serverPIDs {
			s += readProc(p).CPU
		}
		return s
	}
	cpu0, t0 := cpu(), time.Now()
	type listing struct {
		keys, pages int
		took        time.Duration
		err         error
	}
	out := make([]listing, *conc)
	var wg sync.WaitGroup
	for i := range *conc {
		wg.Go(func() {
			start := time.Now()
			cursor := ""
			for {
				q := url.Values{"prefix": {*prefix}, "limit": {strconv.Itoa(*limit)}}
				if *keysOnly {
					q.Set("keys_only", "true")
				}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoints[(i+out[i].pages)%len(endpoints)]+"/v1/kv?"+q.Encode(), nil)
				b, err := do(req)
				if err != nil {
					out[i].err = err
					return
				}
				var page struct {
					Items      []json.RawMessage `json:"items"`
					NextCursor string            `json:"next_cursor"`
				}
				if err := json.Unmarshal(b, &page); err != nil {
					out[i].err = err
					return
				}
				out[i].keys += len(page.Items)
				out[i].pages++
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			out[i].took = time.Since(start)
		})
	}
	wg.Wait()
	wall, used := time.Since(t0), cpu()-cpu0
	total := 0
	for i, l := range out {
		if l.err != nil {
			return fmt.Errorf("listing %d: %w", i, l.err)
		}
		total += l.keys
		fmt.Fprintf(stdout, "listing %d: %d keys in %d pages, %.2fs (%.0f keys/s)\n", i, l.keys, l.pages, l.took.Seconds(), float64(l.keys)/l.took.Seconds())
	}
	fmt.Fprintf(stdout, "kvlist c=%d limit=%d keys_only=%v: %d keys listed in %.2fs: %.0f keys/s", *conc, *limit, *keysOnly, total, wall.Seconds(), float64(total)/wall.Seconds())
	if len(serverPIDs) > 0 && total > 0 {
		fmt.Fprintf(stdout, ", servers %.2f cpu-s (%.1f cpu-ms per 1000 keys)", used, used*1e6/float64(total))
	}
	fmt.Fprintln(stdout)
	return nil
}
