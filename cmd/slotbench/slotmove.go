package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// slotbench slotmove: what a live hash-slot move costs the writes of the
// moving slot and of the others. It fills the store (-store-mb of values
// over every slot), then runs -writers closed-loop writers, half of them on
// keys of the moving slot and half on keys of other slots; after -before of
// steady load it starts the migration of that slot to -to-group, follows
// the task to its end, keeps the load for -after, and reports, for the
// writes started while the move ran, their latency — a write refused with a
// retryable 503 (the fence) is retried after its Retry-After and counted as
// one write from its first try to its success — and the task's phases.
//
//	slotbench slotmove -endpoints http://127.0.0.1:8081,… -store-mb 1024 -to-group 2

type slotMoveConfig struct {
	endpoints       []string
	storeMB         int
	valueSize       int
	loadC, writers  int
	slot, toGroup   int
	before, after   time.Duration
	timeout         time.Duration
	skipFill        bool
	jsonOut, prefix string
}

type moveWrite struct {
	start   time.Time
	latency time.Duration
	moving  bool
	tries   int
	ok      bool
}

// moveResult is what slotmove reports (and -json writes).
type moveResult struct {
	StoreMB      int              `json:"store_mb"`
	Slot         int              `json:"hash_slot"`
	ToGroup      int              `json:"to_group"`
	MoveS        float64          `json:"move_s"`
	Moving       latencySummary   `json:"moving_slot"`
	Others       latencySummary   `json:"other_slots"`
	Baseline     latencySummary   `json:"moving_slot_before"`
	Phases       []map[string]any `json:"phases"`
	TaskStatus   string           `json:"task_status"`
	FencedMs     int64            `json:"fenced_ms"` // from the fence step's record to the switch's
	FillSeconds  float64          `json:"fill_s"`
	WritesFailed int              `json:"writes_failed"`
}

type latencySummary struct {
	N       int     `json:"n"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	Retried int     `json:"retried"` // writes that were refused at least once
}

func summarize(ws []moveWrite) latencySummary {
	if len(ws) == 0 {
		return latencySummary{}
	}
	ls := make([]float64, 0, len(ws))
	s := latencySummary{N: len(ws)}
	for _, w := range ws {
		ls = append(ls, float64(w.latency.Microseconds())/1000)
		if w.tries > 1 {
			s.Retried++
		}
	}
	slices.Sort(ls)
	q := func(p float64) float64 { return ls[min(len(ls)-1, int(p*float64(len(ls))))] }
	s.P50Ms, s.P99Ms, s.MaxMs = q(0.50), q(0.99), ls[len(ls)-1]
	return s
}

func hashSlotOf(key string) int { return int(crc32.ChecksumIEEE([]byte(key)) % 256) }

func slotMoveCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("slotbench slotmove", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c slotMoveConfig
	var eps string
	fs.StringVar(&eps, "endpoints", "http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083", "comma-separated base URLs (loopback only)")
	fs.IntVar(&c.storeMB, "store-mb", 1024, "MiB of values to fill the store with first (spread over every hash slot)")
	fs.IntVar(&c.valueSize, "fill-value-size", 60<<10, "bytes of each fill value")
	fs.IntVar(&c.loadC, "fill-c", 16, "workers that fill the store")
	fs.IntVar(&c.writers, "writers", 16, "closed-loop writers during the move (half on the moving slot)")
	fs.IntVar(&c.slot, "slot", 7, "the hash slot to move")
	fs.IntVar(&c.toGroup, "to-group", 2, "the group to move it to")
	fs.DurationVar(&c.before, "before", 2*time.Second, "steady load before the move starts")
	fs.DurationVar(&c.after, "after", time.Second, "load after the move ended")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "the longest the move may take")
	fs.BoolVar(&c.skipFill, "skip-fill", false, "the store is filled already (an earlier run)")
	fs.StringVar(&c.jsonOut, "json", "", "append the result as one JSON line to this file")
	fs.StringVar(&c.prefix, "key-prefix", "mv", "prefix of the keys written")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, ep := range strings.Split(eps, ",") {
		c.endpoints = append(c.endpoints, strings.TrimSuffix(ep, "/"))
	}
	if err := loopbackOnly(c.endpoints); err != nil {
		return err
	}
	if c.slot < 0 || c.slot > 255 || c.writers < 2 || c.valueSize < 1 || c.valueSize > 64<<10 {
		return fmt.Errorf("slotmove: -slot 0..255, -writers ≥ 2, -fill-value-size 1..65536")
	}
	res, err := runSlotMove(context.Background(), c, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "| store | move took | fenced | writes to the moving slot during the move: n, p50, p99, max (retried) | other slots: n, p99, max | moving slot before the move: p99 |\n")
	fmt.Fprintf(stdout, "| --: | --: | --: | --- | --- | --: |\n")
	fmt.Fprintf(stdout, "| %d MiB | %.2f s | %d ms | %d, %.1f / %.1f / %.1f ms (%d) | %d, %.1f / %.1f ms | %.1f ms |\n",
		res.StoreMB, res.MoveS, res.FencedMs, res.Moving.N, res.Moving.P50Ms, res.Moving.P99Ms, res.Moving.MaxMs, res.Moving.Retried,
		res.Others.N, res.Others.P99Ms, res.Others.MaxMs, res.Baseline.P99Ms)
	fmt.Fprintf(stdout, "\ntask %s; writes that failed outright: %d; fill %.1f s\n", res.TaskStatus, res.WritesFailed, res.FillSeconds)
	for _, p := range res.Phases {
		fmt.Fprintf(stdout, "- %v: %v\n", p["phase"], p["note"])
	}
	if c.jsonOut != "" {
		b, _ := json.Marshal(res)
		if err := appendLine(c.jsonOut, b); err != nil {
			return err
		}
	}
	return nil
}

func runSlotMove(ctx context.Context, c slotMoveConfig, log io.Writer) (*moveResult, error) {
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DialContext: loopbackDialer(5 * time.Second).DialContext}}
	res := &moveResult{StoreMB: c.storeMB, Slot: c.slot, ToGroup: c.toGroup}
	put := func(ep, key string, value []byte) (int, time.Duration, error) {
		body, _ := json.Marshal(map[string]string{"value": string(value)})
		req, _ := http.NewRequestWithContext(ctx, "PUT", ep+"/v1/kv/"+key, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := cl.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		wait := time.Duration(ra) * time.Second
		if wait == 0 {
			wait = 20 * time.Millisecond
		}
		return resp.StatusCode, min(wait, 50*time.Millisecond), nil
	}
	if !c.skipFill {
		start := time.Now()
		n := c.storeMB << 20 / c.valueSize
		// Random letters: Pebble compresses its blocks, and a store of
		// repeated bytes would be far smaller on disk than -store-mb.
		value := make([]byte, c.valueSize)
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		for i := range value {
			value[i] = letters[rand.IntN(len(letters))]
		}
		jobs := make(chan int)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var fillErr error
		for w := range c.loadC {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					ep := c.endpoints[(i+w)%len(c.endpoints)]
					for try := 0; ; try++ {
						code, wait, err := put(ep, fmt.Sprintf("%s-fill-%d", c.prefix, i), value)
						if err == nil && code == 200 {
							break
						}
						if try == 20 {
							mu.Lock()
							fillErr = fmt.Errorf("fill key %d: status %d, %v", i, code, err)
							mu.Unlock()
							break
						}
						time.Sleep(wait)
					}
				}
			}()
		}
		for i := range n {
			jobs <- i
			if i%2000 == 0 {
				fmt.Fprintf(log, "slotmove: filled %d of %d values (%d MiB)\n", i, n, i*c.valueSize>>20)
			}
		}
		close(jobs)
		wg.Wait()
		if fillErr != nil {
			return nil, fillErr
		}
		res.FillSeconds = time.Since(start).Seconds()
	}
	// The keys of the moving slot and of the others.
	var moving, others []string
	for i := 0; len(moving) < 64 || len(others) < 64; i++ {
		k := fmt.Sprintf("%s-w-%d", c.prefix, i)
		if hashSlotOf(k) == c.slot {
			if len(moving) < 64 {
				moving = append(moving, k)
			}
		} else if len(others) < 64 {
			others = append(others, k)
		}
	}
	var mu sync.Mutex
	var writes []moveWrite
	stop := make(chan struct{})
	var wg sync.WaitGroup
	value := bytes.Repeat([]byte("v"), 200)
	for w := range c.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys, isMoving := others, false
			if w%2 == 0 {
				keys, isMoving = moving, true
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key, ep := keys[(i*7+w)%len(keys)], c.endpoints[(i+w)%len(c.endpoints)]
				wr := moveWrite{start: time.Now(), moving: isMoving}
				for wr.tries < 200 {
					wr.tries++
					code, wait, err := put(ep, key, value)
					if err == nil && code == 200 {
						wr.ok = true
						break
					}
					time.Sleep(wait) // a retryable refusal (the fence, a leader change): its Retry-After, at most 50 ms
				}
				wr.latency = time.Since(wr.start)
				mu.Lock()
				writes = append(writes, wr)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(c.before)
	moveStart := time.Now()
	task, err := startMove(ctx, cl, c)
	if err != nil {
		close(stop)
		wg.Wait()
		return nil, err
	}
	deadline := time.Now().Add(c.timeout)
	for {
		t, err := getTask(ctx, cl, c.endpoints[0], task)
		if err == nil && t.Status != "running" {
			res.TaskStatus = t.Status
			res.Phases = t.History
			break
		}
		if time.Now().After(deadline) {
			res.TaskStatus = "still running after the timeout"
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	moveEnd := time.Now()
	res.MoveS = moveEnd.Sub(moveStart).Seconds()
	time.Sleep(c.after)
	close(stop)
	wg.Wait()
	var during, duringOthers, before []moveWrite
	for _, w := range writes {
		if !w.ok {
			res.WritesFailed++
			continue
		}
		switch {
		case w.start.Before(moveStart) && w.moving:
			before = append(before, w)
		case w.start.After(moveEnd):
		case w.moving:
			during = append(during, w)
		default:
			duringOthers = append(duringOthers, w)
		}
	}
	res.Moving, res.Others, res.Baseline = summarize(during), summarize(duringOthers), summarize(before)
	var fenceAt, switchAt float64
	for _, p := range res.Phases {
		at, _ := p["at_ms"].(float64)
		switch p["phase"] {
		case "fence":
			fenceAt = at
		case "switch":
			switchAt = at
		}
	}
	if fenceAt > 0 && switchAt >= fenceAt {
		res.FencedMs = int64(switchAt - fenceAt)
	}
	return res, nil
}

type moveTask struct {
	ID      int64            `json:"id"`
	Status  string           `json:"status"`
	History []map[string]any `json:"history"`
}

func startMove(ctx context.Context, cl *http.Client, c slotMoveConfig) (int64, error) {
	body := fmt.Sprintf(`{"to_group":%d}`, c.toGroup)
	req, _ := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/v1/cluster/hash-slots/%d/migrations", c.endpoints[0], c.slot), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := cl.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return 0, fmt.Errorf("slotmove: the migration was refused: %d %s", resp.StatusCode, b)
	}
	var t moveTask
	return t.ID, json.Unmarshal(b, &t)
}

func getTask(ctx context.Context, cl *http.Client, ep string, id int64) (moveTask, error) {
	var t moveTask
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/cluster/tasks/%d", ep, id), nil)
	resp, err := cl.Do(req)
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return t, fmt.Errorf("task %d: %d", id, resp.StatusCode)
	}
	return t, json.NewDecoder(resp.Body).Decode(&t)
}
