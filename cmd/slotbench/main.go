// Command slotbench is a closed-loop load generator for slotmeta's REST API
// and, for comparison, etcd's v3 HTTP/JSON gateway. Each of -c workers sends
// one request, waits for the answer and sends the next, for -duration after
// a -warmup, spreading its requests over every -endpoints node. It prints
// ops/s, latency percentiles, errors by status and code and, given -pids, each
// server's CPU seconds and peak RSS; -json appends the result as one line.
//
//	slotbench -workload kv-put -c 64 -duration 5s \
//	    -endpoints http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083 -pids 101,102,103
//	slotbench -target etcd -workload get-linearizable -endpoints http://127.0.0.1:2379
//	slotbench report results.jsonl            # markdown tables (and ratios when both targets ran)
//	slotbench freeport -offsets 0,1,2,1000    # a base port whose base+offsets are all free on 127.0.0.1
//	slotbench slotmove -store-mb 1024         # a live hash-slot move under writes (slotmove.go)
//
// Workloads: kv-put (distinct keys), user-create, subscribers-add (10 new uids
// a call over -channels channels created first), get-linearizable and
// get-local (over -keys preloaded keys), mixed (-read-percent linearizable
// reads, the rest kv-put), preload (writes the read keys, measured).
// Loopback only: endpoints and every dialled address must be 127.0.0.0/8,
// ::1 or localhost.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	var err error
	switch {
	case len(args) > 0 && args[0] == "report":
		err = reportCmd(args[1:], os.Stdout)
	case len(args) > 0 && args[0] == "freeport":
		err = freeportCmd(args[1:], os.Stdout)
	case len(args) > 0 && args[0] == "noop":
		err = noopCmd(args[1:], os.Stdout)
	case len(args) > 0 && args[0] == "kvlist":
		err = kvListCmd(args[1:], os.Stdout, os.Stderr)
	case len(args) > 0 && args[0] == "slotmove":
		err = slotMoveCmd(args[1:], os.Stdout, os.Stderr)
	case len(args) > 0 && args[0] == "run":
		err = runCmd(args[1:], os.Stdout, os.Stderr)
	default:
		err = runCmd(args, os.Stdout, os.Stderr)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "slotbench:", err)
		os.Exit(1)
	}
}

func runCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("slotbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	var eps, pids, jsonOut string
	fs.StringVar(&cfg.Target, "target", "slotmeta", "slotmeta (REST API) or etcd (v3 HTTP/JSON gateway)")
	fs.StringVar(&eps, "endpoints", "http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083", "comma-separated base URLs (loopback only)")
	fs.StringVar(&cfg.Workload, "workload", "kv-put", strings.Join(workloads, " | "))
	fs.IntVar(&cfg.Concurrency, "c", 16, "concurrent closed-loop workers (and HTTP connections)")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "measured duration")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "load before measuring (not counted)")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Second, "timeout of one request")
	fs.IntVar(&cfg.ValueSize, "value-size", 200, "bytes of each value (and user name)")
	fs.IntVar(&cfg.Keys, "keys", 2000, "read workloads: preloaded keys to read")
	fs.StringVar(&cfg.KeyPrefix, "key-prefix", "sbpre", "read workloads: the preloaded keys are PREFIX.0 … PREFIX.(keys-1)")
	fs.BoolVar(&cfg.Preload, "preload", true, "read workloads: write the keys first (-preload=false if an earlier run did)")
	fs.IntVar(&cfg.PreloadConc, "preload-c", 32, "workers for preloading keys and creating channels")
	fs.IntVar(&cfg.Channels, "channels", 64, "subscribers-add: channels to create and add to")
	fs.IntVar(&cfg.UIDsPerCall, "uids", 10, "subscribers-add: new uids per call")
	fs.IntVar(&cfg.Batch, "batch", 100, "batch-get: preloaded keys read per request; batch-put: new keys written per request")
	fs.IntVar(&cfg.ReadPercent, "read-percent", 90, "mixed: percent of requests that are linearizable reads")
	fs.IntVar(&cfg.WatchStreams, "watch-streams", 0, "carry the -watchers over this many multiplexed streams per endpoint (GET /v1/watch/stream, client.Watcher); 0: a stream each (GET /v1/watch)")
	fs.IntVar(&cfg.Watchers, "watchers", 0, "watch streams beside the load, one key each (sbw.RUN.0…; kv-put-watched writes those keys, over -keys of them)")
	fs.StringVar(&pids, "pids", "", "comma-separated server PIDs: CPU seconds in the run and peak RSS (VmHWM)")
	fs.DurationVar(&cfg.Idle, "idle", 0, "with -pids: first measure for this long how many cores the servers use with no load from slotbench")
	fs.DurationVar(&cfg.Settle, "settle", 0, "with -pids: first wait up to this long until the servers use fewer than -settle-cores")
	fs.Float64Var(&cfg.SettleCores, "settle-cores", 0.3, "see -settle")
	fs.StringVar(&cfg.Client, "client", "raw", "raw (slotbench's own connections, to the endpoints in turn) | smart (the route-aware Go client: to each key's leader; slotmeta) | grpc (etcd's own Go client, clientv3; etcd)")
	fs.BoolVar(&cfg.IdempotencyKeys, "idempotency-keys", false, "kv-put: each write carries an Idempotency-Key, as -client smart's do (-client raw)")
	fs.StringVar(&cfg.Token, "token", os.Getenv("SLOTBENCH_TOKEN"), "slotmeta: bearer token (default $SLOTBENCH_TOKEN)")
	fs.StringVar(&jsonOut, "json", "", "append the result as one JSON line to this file")
	fs.StringVar(&cfg.Label, "label", "", "free text stored with the result")
	fs.StringVar(&cfg.RunID, "run-id", "", "unique part of written keys (default: from the clock)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, e := range strings.Split(eps, ",") {
		if e = strings.TrimRight(strings.TrimSpace(e), "/"); e != "" {
			cfg.Endpoints = append(cfg.Endpoints, e)
		}
	}
	for _, p := range strings.Split(pids, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return fmt.Errorf("-pids: %q is not a PID", p)
		}
		cfg.PIDs = append(cfg.PIDs, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "slotbench: %s %s c=%d for %s (+%s warm-up) over %d endpoint(s)\n",
		cfg.Target, cfg.Workload, cfg.Concurrency, cfg.Duration, cfg.Warmup, len(cfg.Endpoints))
	res, err := Run(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	printResult(stdout, res)
	if jsonOut != "" {
		b, _ := json.Marshal(res)
		if err := appendLine(jsonOut, b); err != nil {
			return err
		}
	}
	return nil
}

// freeportCmd prints a base port B such that 127.0.0.1:B+offset can be bound
// for every offset.
func freeportCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("slotbench freeport", flag.ContinueOnError)
	offs := fs.String("offsets", "0", "comma-separated offsets from the base")
	lo := fs.Int("min", 20000, "lowest base")
	hi := fs.Int("max", 40000, "highest base")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var offsets []int
	maxOff := 0
	for _, s := range strings.Split(*offs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			return fmt.Errorf("-offsets: %q", s)
		}
		offsets = append(offsets, n)
		maxOff = max(maxOff, n)
	}
	if *lo < 1024 || *hi <= *lo || *hi+maxOff > 65535 {
		return errors.New("want 1024 <= -min < -max and -max + the largest offset <= 65535")
	}
	for range 200 {
		base := *lo + rand.IntN(*hi-*lo)
		var ls []net.Listener
		ok := true
		for _, o := range offsets {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+o))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			fmt.Fprintln(out, base)
			return nil
		}
	}
	return errors.New("no free base port found")
}

// appendLine appends b and a newline to the file at path (created if need be).
func appendLine(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
