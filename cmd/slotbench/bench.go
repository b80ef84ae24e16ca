package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slotmeta/slotmeta/client/routed"
)

// Workloads slotbench knows.
var workloads = []string{"kv-put", "kv-put-watched", "user-create", "subscribers-add", "get-linearizable", "get-local", "mixed", "batch-get", "batch-put", "preload"}

// Config is one run.
type Config struct {
	Target      string
	Endpoints   []string // base URLs, e.g. http://127.0.0.1:8081
	Workload    string
	Concurrency int
	Duration    time.Duration // measured
	Warmup      time.Duration // run before measuring, not counted
	Timeout     time.Duration // one request
	ValueSize   int
	Keys        int    // preloaded keys the reads cycle through
	KeyPrefix   string // of the preloaded keys
	Preload     bool   // write the read keys before the run
	PreloadConc int
	Channels    int // subscribers-add: channels created first
	UIDsPerCall int
	ReadPercent int // mixed: reads out of 100
	RunID       string
	PIDs        []int         // server processes to sample
	Idle        time.Duration // before the run: how busy the servers are with no load from us
	Settle      time.Duration // before the run: wait at most this long for the servers to be idle
	SettleCores float64       // idle means fewer cores busy than this
	Token       string        // slotmeta: bearer token, if the cluster has tokens
	Label       string
	// Namespaces also allows the 10.0.0.0/8 addresses of network-namespace
	// hosts made on this machine (the scale-out benchmark's); the command
	// line never sets it.
	Namespaces bool
	// Routes, when set, sends each keyed request where the cluster's routes
	// say (writes to the leader, reads to a replica); nil spreads requests
	// evenly over Endpoints.
	Routes *Routes
	// Watchers is how many watches run beside the load (watchers.go;
	// slotmeta only).
	Watchers int
	// WatchStreams, when set, carries the watchers over that many
	// multiplexed streams per endpoint (client.Watcher); 0 opens a stream
	// per watcher (GET /v1/watch).
	WatchStreams int
	// Batch is how many keys one batch-get (preloaded keys) or batch-put
	// (new keys) request names.
	Batch int
	// Client is who sends the requests: "raw" (slotbench's own
	// connections, to the endpoints in turn) or "smart" (the route-aware
	// Go client, smart.go; slotmeta only) or "grpc" (etcd's own Go client,
	// etcdgrpc.go; etcd only).
	Client string
	// IdempotencyKeys: each kv-put carries an Idempotency-Key, as the
	// routed client's writes do (-client raw only), so that forwarding's
	// cost can be told from the keys' (issue 49).
	IdempotencyKeys bool
	smart           *routed.Client
	etcd            etcdClients
}

// Result is what one run measured; one JSON line of -json.
type Result struct {
	Time        time.Time          `json:"time"`
	Label       string             `json:"label,omitempty"`
	Target      string             `json:"target"`
	Workload    string             `json:"workload"`
	Concurrency int                `json:"concurrency"`
	Endpoints   []string           `json:"endpoints"`
	DurationS   float64            `json:"duration_s"` // measured window, as it happened
	WarmupS     float64            `json:"warmup_s"`
	ValueSize   int                `json:"value_size"`
	OK          uint64             `json:"ok"`
	Errors      uint64             `json:"errors"`
	OpsPerSec   float64            `json:"ops_per_sec"`
	Latency     latency            `json:"latency"`
	ByKind      map[string]latency `json:"by_kind,omitempty"`
	ErrorsBy    map[string]uint64  `json:"errors_by,omitempty"`
	ErrSamples  map[string]string  `json:"error_samples,omitempty"` // one message per error
	WarmupErrs  uint64             `json:"warmup_errors,omitempty"`
	Servers     []serverStats      `json:"servers,omitempty"`
	ServerCPU   float64            `json:"server_cpu_s"` // all servers, in the measured window
	SettleWaitS float64            `json:"settle_wait_s,omitempty"`
	IdleCores   *float64           `json:"server_idle_cores,omitempty"` // all servers: cores busy before the run, with no load from us
	CPUPerOp    float64            `json:"server_cpu_ms_per_op"`
	ClientCPU   float64            `json:"client_cpu_s"`
	LoadStart   []float64          `json:"loadavg_start"`
	LoadEnd     []float64          `json:"loadavg_end"`
	NumCPU      int                `json:"nproc"`
	Extra       map[string]any     `json:"extra,omitempty"`
	Watch       *watchStats        `json:"watch,omitempty"`
	KeysPerSec  float64            `json:"keys_per_sec,omitempty"` // batch-get, batch-put: keys a second
	Client      string             `json:"client,omitempty"`       // "smart": through client/routed
	kinds       map[string]*hist   // merged, for callers in-process
}

type serverStats struct {
	PID    int     `json:"pid"`
	Name   string  `json:"name"`
	CPU    float64 `json:"cpu_s"` // in the measured window
	HWMMiB float64 `json:"peak_rss_mib"`
	RSSMiB float64 `json:"rss_mib"`
	Err    string  `json:"err,omitempty"`
}

// loopbackOnly refuses any endpoint that is not 127.0.0.0/8, ::1 or localhost.
func loopbackOnly(eps []string) error { return localOnly(eps, false) }

// localOnly is loopbackOnly that, with namespaces, also allows the
// addresses of network-namespace hosts (localIP).
func localOnly(eps []string, namespaces bool) error {
	for _, ep := range eps {
		u, err := url.Parse(ep)
		if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return fmt.Errorf("endpoint %q: want http://HOST:PORT", ep)
		}
		h := u.Hostname()
		if h == "localhost" {
			continue
		}
		if !localIP(net.ParseIP(h), namespaces) {
			return fmt.Errorf("endpoint %q is not a loopback address: slotbench only loads this machine", ep)
		}
	}
	return nil
}

// worker is one closed-loop client: it sends a request, waits for the answer,
// sends the next.
type worker struct {
	id     int
	cfg    *Config
	be     backend
	conns  *conns
	rng    *rand.Rand
	value  []byte
	buf    bytes.Buffer
	hists  map[string]*hist
	errs   map[string]uint64
	sample map[string]string // the first message of each error
	msg    string            // the last failed answer's message
	ok     uint64
	wuErrs uint64
	last   time.Time
}

// do sends c and returns "" on success or the error's name.
func (w *worker) do(ctx context.Context, c call) string {
	var status int
	var err error
	switch {
	case w.cfg.smart != nil:
		status, err = w.smartTrip(ctx, c, &w.buf)
	case w.cfg.etcd != nil:
		status, err = w.etcdTrip(ctx, c, &w.buf)
	default:
		status, err = w.conns.roundTrip(ctx, c, &w.buf)
	}
	w.msg = ""
	if err != nil {
		w.msg = err.Error()
		switch {
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled), errors.Is(err, errClosed):
			return "canceled"
		case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
			return "client-timeout"
		case errors.Is(err, syscall.ECONNREFUSED):
			return "connection-refused"
		case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return "connection-reset"
		}
		s := err.Error()
		if len(s) > 60 {
			s = s[len(s)-60:]
		}
		return "transport:" + s
	}
	if status != c.expect && (c.alt == 0 || status != c.alt) {
		w.msg = w.buf.String()
		if len(w.msg) > 200 {
			w.msg = w.msg[:200]
		}
		code := w.be.errorCode(w.buf.Bytes())
		if code == "" {
			return strconv.Itoa(status)
		}
		return strconv.Itoa(status) + " " + code
	}
	if c.check != nil && status == c.expect && !c.check(w.buf.Bytes()) {
		return strconv.Itoa(status) + " not_found"
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// endpoint spreads requests over all nodes: worker i's k-th request goes to
// node (i+k) mod n, so even one worker touches every node.
func (w *worker) endpoint(k int) string {
	eps := w.cfg.Endpoints
	return eps[(w.id+k)%len(eps)]
}

func readKey(prefix string, i int) string { return prefix + "." + strconv.Itoa(i) }

// routed is where a request for key goes: where the routes say, else the
// next endpoint.
func (w *worker) routed(k int, key string, write bool) string {
	if w.cfg.Routes != nil {
		if ep := w.cfg.Routes.For(key, write, w.id+k); ep != "" {
			return ep
		}
	}
	return w.endpoint(k)
}

// next is the k-th request of worker w in the workload.
func (w *worker) next(k int) call {
	cfg := w.cfg
	ep := w.endpoint(k)
	switch cfg.Workload {
	case "kv-put":
		key := fmt.Sprintf("sb.%s.%d.%d", cfg.RunID, w.id, k)
		c := w.be.put(w.routed(k, key, true), key, w.value)
		if cfg.IdempotencyKeys {
			c.idem = "sbi." + key // what the routed client adds to every write (-client smart)
		}
		return c
	case "kv-put-watched":
		key := watchKey(cfg.RunID, (w.id+k*cfg.Concurrency)%cfg.Keys)
		return w.be.put(w.routed(k, key, true), key, w.value)
	case "preload":
		return w.be.put(ep, readKey(cfg.KeyPrefix, (w.id+k*cfg.Concurrency)%cfg.Keys), w.value)
	case "user-create":
		c, _ := w.be.createUser(ep, fmt.Sprintf("sbu.%s.%d.%d", cfg.RunID, w.id, k), w.value)
		return c
	case "subscribers-add":
		ch := (w.id + k*cfg.Concurrency) % cfg.Channels
		uids := make([]string, cfg.UIDsPerCall)
		for j := range uids {
			uids[j] = fmt.Sprintf("sbs.%s.%d.%d.%d", cfg.RunID, w.id, k, j)
		}
		c, _ := w.be.addSubscribers(ep, 2, channelID(cfg.RunID, ch), uids)
		return c
	case "get-linearizable", "get-local":
		key := readKey(cfg.KeyPrefix, (w.id+k*cfg.Concurrency)%cfg.Keys)
		return w.be.get(w.routed(k, key, false), key, cfg.Workload == "get-linearizable")
	case "batch-put":
		keys := make([]string, cfg.Batch)
		for j := range keys {
			keys[j] = fmt.Sprintf("sbb.%s.%d.%d.%d", cfg.RunID, w.id, k, j)
		}
		c, _ := w.be.batchPut(ep, keys, w.value)
		return c
	case "batch-get":
		keys := make([]string, cfg.Batch)
		for j := range keys {
			keys[j] = readKey(cfg.KeyPrefix, w.rng.IntN(cfg.Keys))
		}
		c, _ := w.be.batchGet(ep, keys)
		return c
	case "mixed":
		if w.rng.IntN(100) < cfg.ReadPercent {
			key := readKey(cfg.KeyPrefix, w.rng.IntN(cfg.Keys))
			return w.be.get(w.routed(k, key, false), key, true)
		}
		key := fmt.Sprintf("sb.%s.%d.%d", cfg.RunID, w.id, k)
		return w.be.put(w.routed(k, key, true), key, w.value)
	}
	panic("unknown workload " + cfg.Workload)
}

func channelID(run string, i int) string { return fmt.Sprintf("sbch.%s.%d", run, i) }

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randValue(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return b
}

func validate(cfg *Config, be backend) error {
	if !contains(workloads, cfg.Workload) {
		return fmt.Errorf("unknown -workload %q; one of %s", cfg.Workload, strings.Join(workloads, ", "))
	}
	if len(cfg.Endpoints) == 0 {
		return errors.New("no -endpoints")
	}
	if err := localOnly(cfg.Endpoints, cfg.Namespaces); err != nil {
		return err
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 4096 {
		return fmt.Errorf("-c %d: want 1..4096", cfg.Concurrency)
	}
	if cfg.Duration <= 0 || cfg.Duration > time.Hour || cfg.Warmup < 0 || cfg.Timeout <= 0 || cfg.Timeout > 5*time.Minute {
		return errors.New("want 0 < -duration <= 1h, -warmup >= 0, 0 < -timeout <= 5m")
	}
	if cfg.ValueSize < 1 || cfg.ValueSize > 65536 || cfg.Keys < 1 || cfg.Channels < 1 || cfg.UIDsPerCall < 1 || cfg.UIDsPerCall > 1000 {
		return errors.New("want 1 <= -value-size <= 65536, -keys >= 1, -channels >= 1, 1 <= -uids <= 1000")
	}
	if cfg.PreloadConc < 1 || cfg.PreloadConc > 1024 {
		return errors.New("-preload-c: 1..1024")
	}
	if cfg.ReadPercent < 0 || cfg.ReadPercent > 100 {
		return errors.New("-read-percent: 0..100")
	}
	if cfg.Watchers < 0 || cfg.Watchers > 100000 || cfg.Watchers > 0 && (cfg.Target != "slotmeta" || cfg.Watchers > cfg.Keys) {
		return errors.New("-watchers: 0..100000, at most -keys, slotmeta only")
	}
	if cfg.WatchStreams < 0 || cfg.WatchStreams > 1000 {
		return errors.New("-watch-streams: 0..1000")
	}
	switch cfg.Client {
	case "", "raw":
		cfg.Client = "raw"
	case "smart":
		if cfg.Target != "slotmeta" || cfg.Routes != nil {
			return errors.New("-client smart: slotmeta only, not with routes of slotbench's own")
		}
	case "grpc":
		if cfg.Target != "etcd" || cfg.Routes != nil {
			return errors.New("-client grpc: etcd only")
		}
	default:
		return fmt.Errorf("-client %q: raw, smart or grpc", cfg.Client)
	}
	if cfg.IdempotencyKeys && (cfg.Client != "raw" || cfg.Target != "slotmeta") {
		return errors.New("-idempotency-keys: -target slotmeta -client raw only (the routed client adds its own)")
	}
	switch cfg.Workload {
	case "user-create":
		if _, ok := be.createUser("", "", nil); !ok {
			return fmt.Errorf("-target %s has no %s workload", be.name(), cfg.Workload)
		}
	case "subscribers-add":
		if _, ok := be.addSubscribers("", 0, "", nil); !ok {
			return fmt.Errorf("-target %s has no %s workload", be.name(), cfg.Workload)
		}
	case "batch-put":
		if _, ok := be.batchPut("", nil, nil); !ok {
			return fmt.Errorf("-target %s has no %s workload", be.name(), cfg.Workload)
		}
		if cfg.Batch < 1 || cfg.Batch > 1000 {
			return errors.New("-batch: 1..1000")
		}
	case "batch-get":
		if _, ok := be.batchGet("", nil); !ok {
			return fmt.Errorf("-target %s has no %s workload", be.name(), cfg.Workload)
		}
		if cfg.Batch < 1 || cfg.Batch > 1000 {
			return errors.New("-batch: 1..1000")
		}
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// parallel runs fn(i) for i in [0,n) on conc goroutines; the first error
// stops the rest.
func parallel(ctx context.Context, n, conc int, fn func(ctx context.Context, worker, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for g := range min(conc, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, g, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = context.Cause(ctx)
		if errors.Is(first, context.Canceled) {
			first = nil
		}
	}
	return first
}

// setupCall sends c, retrying a failure a few times (the cluster may still be
// electing leaders).
func setupCall(ctx context.Context, w *worker, c call) error {
	var last string
	for attempt := range 6 {
		if last = w.do(ctx, c); last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(100*(attempt+1)) * time.Millisecond):
		}
	}
	return fmt.Errorf("%s %s: %s", c.method, c.url(), last)
}

// Run performs one benchmark run. progress gets human-readable notes.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Result, error) {
	be, err := newBackend(cfg.Target)
	if err != nil {
		return nil, err
	}
	if err := validate(&cfg, be); err != nil {
		return nil, err
	}
	if cfg.RunID == "" {
		cfg.RunID = strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	}
	// A hard stop for everything below, setup included.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute+cfg.Warmup+cfg.Duration+2*cfg.Timeout)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	// Every worker's connections are closed when the run ends or is stopped.
	var madeMu sync.Mutex
	var made []*worker
	closeAll := func() {
		madeMu.Lock()
		defer madeMu.Unlock()
		for _, w := range made {
			w.conns.close()
		}
	}
	defer closeAll()
	defer context.AfterFunc(ctx, closeAll)()
	mk := func(id int) *worker {
		r := rand.New(rand.NewPCG(seed, uint64(id)))
		w := &worker{id: id, cfg: &cfg, be: be, conns: newConns(cfg.Timeout, cfg.Token, cfg.Namespaces), rng: r, value: randValue(r, cfg.ValueSize),
			hists: map[string]*hist{}, errs: map[string]uint64{}, sample: map[string]string{}}
		madeMu.Lock()
		made = append(made, w)
		madeMu.Unlock()
		return w
	}

	if cfg.Client == "smart" {
		if cfg.smart, err = newSmart(ctx, &cfg); err != nil {
			return nil, err
		}
		defer cfg.smart.Close()
	}
	if cfg.Client == "grpc" {
		if cfg.etcd, err = newEtcdClients(ctx, &cfg); err != nil {
			return nil, err
		}
		defer cfg.etcd.close()
	}
	// Every endpoint answers before anything is measured.
	for _, ep := range cfg.Endpoints {
		if err := setupCall(ctx, mk(0), be.ready(ep)); err != nil {
			return nil, fmt.Errorf("endpoint not ready: %w", err)
		}
	}
	switch cfg.Workload {
	case "get-linearizable", "get-local", "mixed", "batch-get":
		if cfg.Preload {
			t0 := time.Now()
			ws := make([]*worker, cfg.PreloadConc)
			err := parallel(ctx, cfg.Keys, cfg.PreloadConc, func(ctx context.Context, g, i int) error {
				if ws[g] == nil {
					ws[g] = mk(g)
				}
				return setupCall(ctx, ws[g], be.put(cfg.Endpoints[i%len(cfg.Endpoints)], readKey(cfg.KeyPrefix, i), ws[g].value))
			})
			if err != nil {
				return nil, fmt.Errorf("preload: %w", err)
			}
			fmt.Fprintf(progress, "preloaded %d keys %s.* in %.1fs\n", cfg.Keys, cfg.KeyPrefix, time.Since(t0).Seconds())
		}
	case "subscribers-add":
		ws := make([]*worker, cfg.PreloadConc)
		err := parallel(ctx, cfg.Channels, cfg.PreloadConc, func(ctx context.Context, g, i int) error {
			if ws[g] == nil {
				ws[g] = mk(g)
			}
			c, _ := be.createChannel(cfg.Endpoints[i%len(cfg.Endpoints)], 2, channelID(cfg.RunID, i))
			return setupCall(ctx, ws[g], c)
		})
		if err != nil {
			return nil, fmt.Errorf("creating channels: %w", err)
		}
		fmt.Fprintf(progress, "created %d channels sbch.%s.*\n", cfg.Channels, cfg.RunID)
	}

	// How busy are the servers with no load from us? With -settle, wait
	// (at most that long) until they are below -settle-cores, e.g. while a
	// previous run's background work (the membership projection) drains.
	var idle *float64
	var settled float64
	if (cfg.Idle > 0 || cfg.Settle > 0) && len(cfg.PIDs) > 0 {
		win := cfg.Idle
		if win <= 0 {
			win = time.Second
		}
		t0 := time.Now()
		for {
			var a, b float64
			for _, p := range cfg.PIDs {
				a += readProc(p).CPU
			}
			w0 := time.Now()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(win):
			}
			for _, p := range cfg.PIDs {
				b += readProc(p).CPU
			}
			v := (b - a) / time.Since(w0).Seconds()
			idle = &v
			if cfg.Settle <= 0 || v <= cfg.SettleCores || time.Since(t0) >= cfg.Settle {
				break
			}
		}
		settled = time.Since(t0).Seconds() - win.Seconds()
		fmt.Fprintf(progress, "servers idle: %.2f cores busy over %s before the run (waited %.1fs for them to settle)\n", *idle, win, settled)
	}

	ws := make([]*worker, cfg.Concurrency)
	for i := range ws {
		ws[i] = mk(i)
	}
	res := &Result{Client: strings.TrimPrefix(cfg.Client, "raw"), IdleCores: idle, SettleWaitS: settled, Time: time.Now().UTC(), Label: cfg.Label, Target: cfg.Target, Workload: cfg.Workload,
		Concurrency: cfg.Concurrency, Endpoints: cfg.Endpoints, WarmupS: cfg.Warmup.Seconds(),
		ValueSize: cfg.ValueSize, NumCPU: runtime.NumCPU(), LoadStart: loadAvg()}

	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	end := measureFrom.Add(cfg.Duration)
	var before []procSample
	var clientBefore procSample
	var snapOnce sync.Once
	snap := func() {
		snapOnce.Do(func() {
			for _, p := range cfg.PIDs {
				before = append(before, readProc(p))
			}
			clientBefore = readProc(os.Getpid())
		})
	}
	if cfg.Warmup == 0 {
		snap()
	} else {
		t := time.AfterFunc(cfg.Warmup, snap)
		defer t.Stop()
	}
	var watching *watchers
	if cfg.Watchers > 0 {
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		t0 := time.Now()
		var err error
		if watching, err = startWatchers(wctx, &cfg, cfg.Watchers, measureFrom); err != nil {
			return nil, err
		}
		defer watching.stop()
		fmt.Fprintf(progress, "%d watchers started in %.1fs\n", cfg.Watchers, time.Since(t0).Seconds())
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		// The label marks the load generator's samples in an in-process
		// CPU profile.
		wg.Go(func() {
			pprof.Do(ctx, pprof.Labels("slotbench", "client"), func(ctx context.Context) { w.loop(ctx, end, measureFrom) })
		})
	}
	wg.Wait()
	snap() // a run shorter than its warm-up
	stop := end
	all := newHist()
	kinds := map[string]*hist{}
	res.ErrorsBy = map[string]uint64{}
	for _, w := range ws {
		if w.last.After(stop) {
			stop = w.last
		}
		res.OK += w.ok
		res.WarmupErrs += w.wuErrs
		for k, n := range w.errs {
			res.ErrorsBy[k] += n
			res.Errors += n
		}
		for k, m := range w.sample {
			if res.ErrSamples == nil {
				res.ErrSamples = map[string]string{}
			}
			if res.ErrSamples[k] == "" {
				res.ErrSamples[k] = m
			}
		}
		for k, h := range w.hists {
			all.merge(h)
			if kinds[k] == nil {
				kinds[k] = newHist()
			}
			kinds[k].merge(h)
		}
	}
	elapsed := stop.Sub(measureFrom)
	res.DurationS = elapsed.Seconds()
	if elapsed > 0 {
		res.OpsPerSec = float64(res.OK) / elapsed.Seconds()
		if cfg.Workload == "batch-get" || cfg.Workload == "batch-put" {
			res.KeysPerSec = res.OpsPerSec * float64(cfg.Batch)
		}
	}
	res.Latency = all.summary()
	res.kinds = kinds
	if len(kinds) > 1 {
		res.ByKind = map[string]latency{}
		for k, h := range kinds {
			res.ByKind[k] = h.summary()
		}
	}
	for i, p := range cfg.PIDs {
		a := readProc(p)
		s := serverStats{PID: p, Name: a.Name, CPU: a.CPU - before[i].CPU,
			HWMMiB: float64(a.HWMKiB) / 1024, RSSMiB: float64(a.RSSKiB) / 1024, Err: a.Err}
		if a.Err != "" || before[i].Err != "" {
			s.CPU = 0
			s.Err = a.Err + before[i].Err
		}
		res.Servers = append(res.Servers, s)
		res.ServerCPU += s.CPU
	}
	if res.OK > 0 && len(cfg.PIDs) > 0 {
		res.CPUPerOp = res.ServerCPU * 1000 / float64(res.OK)
	}
	res.ClientCPU = readProc(os.Getpid()).CPU - clientBefore.CPU
	res.LoadEnd = loadAvg()
	if watching != nil {
		// The last writes' deliveries: until the watchers have seen their
		// share of the measured writes (all, when every key is watched), at
		// most two seconds.
		watching.await(res.OK*uint64(cfg.Watchers)/uint64(cfg.Keys), 2*time.Second)
		res.Watch = watching.stats(cfg.Watchers)
	}
	if cfg.smart != nil {
		// What the route-aware client did over the whole run (setup and
		// warm-up included): how much went straight to a leader.
		st := cfg.smart.Stats()
		res.Extra = map[string]any{"smart_requests": st.Requests, "smart_direct": st.Direct, "smart_retries": st.Retries,
			"smart_refreshes": st.Refreshes, "smart_stream_tables": st.StreamEvents}
	}
	return res, nil
}

// printResult writes the human-readable summary of r.
func printResult(out io.Writer, r *Result) {
	l := r.Latency
	fmt.Fprintf(out, "%s %s c=%d: %.0f ops/s (%d ok, %d errors in %.2fs) latency p50 %.2f ms p99 %.2f ms p999 %.2f ms max %.2f ms mean %.2f ms\n",
		r.Target, r.Workload, r.Concurrency, r.OpsPerSec, r.OK, r.Errors, r.DurationS, l.P50, l.P99, l.P999, l.Max, l.Mean)
	if r.KeysPerSec > 0 {
		fmt.Fprintf(out, "  keys: %.0f keys/s\n", r.KeysPerSec)
	}
	kinds := make([]string, 0, len(r.ByKind))
	for k := range r.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		b := r.ByKind[k]
		fmt.Fprintf(out, "  %-5s %d ops p50 %.2f ms p99 %.2f ms p999 %.2f ms\n", k, b.N, b.P50, b.P99, b.P999)
	}
	if r.Extra["smart_requests"] != nil {
		fmt.Fprintf(out, "  smart client: %v requests, %v attempts straight to a leader, %v retries, %v refreshes, %v route tables streamed\n",
			r.Extra["smart_requests"], r.Extra["smart_direct"], r.Extra["smart_retries"], r.Extra["smart_refreshes"], r.Extra["smart_stream_tables"])
	}
	if wa := r.Watch; wa != nil {
		d := wa.Delay
		fmt.Fprintf(out, "  watchers %d: %d changes delivered, delay p50 %.2f ms p99 %.2f ms p999 %.2f ms max %.2f ms; streams ended early: %v\n",
			wa.Watchers, wa.Delivered, d.P50, d.P99, d.P999, d.Max, wa.Ended)
	}
	if len(r.ErrorsBy) > 0 {
		keys := make([]string, 0, len(r.ErrorsBy))
		for k := range r.ErrorsBy {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprint(out, "  errors:")
		for _, k := range keys {
			fmt.Fprintf(out, " [%s]×%d", k, r.ErrorsBy[k])
		}
		fmt.Fprintln(out)
		for _, k := range keys {
			if m := r.ErrSamples[k]; m != "" {
				fmt.Fprintf(out, "    e.g. %s: %s\n", k, strings.TrimSpace(m))
			}
		}
	}
	if r.WarmupErrs > 0 {
		fmt.Fprintf(out, "  warm-up errors (not counted): %d\n", r.WarmupErrs)
	}
	for _, s := range r.Servers {
		if s.Err != "" {
			fmt.Fprintf(out, "  server pid %d: %s\n", s.PID, s.Err)
			continue
		}
		fmt.Fprintf(out, "  server pid %d (%s): cpu %.2fs, peak RSS %.1f MiB, RSS %.1f MiB\n", s.PID, s.Name, s.CPU, s.HWMMiB, s.RSSMiB)
	}
	if len(r.Servers) > 0 {
		fmt.Fprintf(out, "  servers: %.2f cpu-s, %.3f cpu-ms per op; ", r.ServerCPU, r.CPUPerOp)
	} else {
		fmt.Fprint(out, "  ")
	}
	fmt.Fprintf(out, "client cpu %.2fs; loadavg %v -> %v (nproc %d)", r.ClientCPU, r.LoadStart, r.LoadEnd, r.NumCPU)
	if r.IdleCores != nil {
		fmt.Fprintf(out, "; servers' idle load before the run %.2f cores", *r.IdleCores)
		if r.SettleWaitS > 0.5 {
			fmt.Fprintf(out, " (after waiting %.0fs for them to settle)", r.SettleWaitS)
		}
	}
	fmt.Fprintln(out)
}

// loop is the closed loop of one worker: it starts requests until end and
// records those started from measureFrom on.
func (w *worker) loop(ctx context.Context, end, measureFrom time.Time) {
	for k := 0; ; k++ {
		t0 := time.Now()
		if !t0.Before(end) || ctx.Err() != nil {
			return
		}
		c := w.next(k)
		e := w.do(ctx, c)
		t1 := time.Now()
		if t0.Before(measureFrom) {
			if e != "" {
				w.wuErrs++
			}
			continue
		}
		w.last = t1
		if e != "" {
			w.errs[e]++
			if _, ok := w.sample[e]; !ok {
				w.sample[e] = w.msg
			}
			continue
		}
		w.ok++
		h := w.hists[c.kind]
		if h == nil {
			h = newHist()
			w.hists[c.kind] = h
		}
		h.record(t1.Sub(t0))
	}
}
