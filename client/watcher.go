package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// A Watcher follows many watches over one multiplexed stream (GET
// /v1/watch/stream): a thousand follows cost one connection to one node
// and one wake-up of it per batch of changes, not a thousand of each. It
// keeps Follow's promise — every change handed on once, in order per hash
// slot, resumed from the last position after a disconnect, on its server
// or the next — for each follow on it.
//
// One goroutine (run) holds the stream: it opens it, reads its events and
// hands each follow's to that follow's queue, which the caller's Follow
// drains into its handler; a second (adds), one per stream, adds the
// follows not on it yet and cancels those that ended. A follow whose
// handler falls Buffer events behind holds up the stream's other follows
// until it catches up: a handler should be quick, or hand on. Close stops
// both and ends every Follow.
type Watcher struct {
	c       *Client
	hc      HttpRequestDoer
	servers []string
	maxWait time.Duration
	buffer  int

	mu       sync.Mutex
	follows  map[uint64]*follow
	nextID   uint64
	stream   *streamConn // the open stream (nil: none)
	max      int         // the most follows a stream carries (its stream event's max_watches)
	toCancel []uint64    // watches of stream whose follows ended
	closed   bool

	kick   chan struct{} // cap 1: something for adds to do
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned
}

// WatcherOptions tune a Watcher.
type WatcherOptions struct {
	// Servers are other nodes' base URLs, tried in turn after the
	// client's own when a stream cannot be opened or is lost.
	Servers []string
	// MaxBackoff bounds the wait before a stream is opened again, and
	// before a watch refused for now is added again (default 5 s; the
	// first wait is 100 ms, doubling).
	MaxBackoff time.Duration
	// Buffer bounds the events queued for one follow's handler (default
	// 256): past it the stream waits for that handler.
	Buffer int
}

// ErrWatcherClosed ends the Follows of a closed Watcher.
var ErrWatcherClosed = errors.New("client: watcher closed")

// follow is one Follow on a Watcher.
type follow struct {
	spec     WatchSpec // Cursor: the last position handed on (under Watcher.mu)
	progress func(string)
	items    chan followItem
	gone     chan struct{} // closed when its Follow returns
	stop     chan struct{} // closed by finish
	once     sync.Once
	err      error // why it ends (set before stop is closed)
	// Under Watcher.mu:
	on      *streamConn // the stream it is added to, or being added to (nil: to add)
	fresh   bool        // added, and nothing handed on from its stream yet
	alone   bool        // added in a request of its own (its batch was refused whole)
	fails   int         // refusals for now in a row
	retryAt time.Time   // not added again before
}

// followItem is what a follow's queue holds: a change or a progress
// position.
type followItem struct {
	ev       *FollowEvent
	progress string
}

// finish ends f with err once what is queued is handed on; it never
// waits.
func (f *follow) finish(err error) {
	f.once.Do(func() {
		f.err = err
		close(f.stop)
	})
}

// streamConn is one open stream.
type streamConn struct {
	server, id string
	cancel     context.CancelFunc // ends it (and run's read of it)
}

// NewWatcher returns a Watcher of c's server (and opts.Servers). It opens
// a stream once it has a follow; Close ends it.
func NewWatcher(c *Client, opts WatcherOptions) *Watcher {
	w := &Watcher{c: c, hc: streamingDoer(c.Client), servers: append([]string{c.Server}, opts.Servers...),
		maxWait: opts.MaxBackoff, buffer: opts.Buffer, follows: map[uint64]*follow{},
		kick: make(chan struct{}, 1), done: make(chan struct{}), max: 10_000}
	if w.maxWait <= 0 {
		w.maxWait = 5 * time.Second
	}
	if w.buffer <= 0 {
		w.buffer = 256
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go w.run()
	return w
}

// Close ends the stream and every Follow on w (ErrWatcherClosed), and
// waits for w's goroutines.
func (w *Watcher) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
	<-w.done
}

// Follow is Client.Follow over w's stream: it watches params from
// opts.From, calling handle with every change in order, until ctx ends
// (ctx's error), handle fails (its error), the watch cannot go on (a
// *WatchError: compacted, refused) or w closes. opts.Servers and
// opts.MaxBackoff are w's (WatcherOptions).
func (w *Watcher) Follow(ctx context.Context, params *WatchParams, opts FollowOptions, handle func(FollowEvent) error) error {
	spec, err := specOf(params, opts.From)
	if err != nil {
		return err
	}
	f := &follow{spec: spec, progress: opts.Progress, items: make(chan followItem, w.buffer), gone: make(chan struct{}), stop: make(chan struct{})}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrWatcherClosed
	}
	if len(w.follows) >= w.max {
		w.mu.Unlock()
		return &WatchError{Code: ErrorCodeRateLimited, Cursor: opts.From,
			Message: fmt.Sprintf("this Watcher carries as many follows as one stream may (%d): follow on another Watcher", w.max)}
	}
	w.nextID++
	f.spec.WatchId = w.nextID
	w.follows[f.spec.WatchId] = f
	w.mu.Unlock()
	w.poke()
	defer w.drop(f)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.done:
			return ErrWatcherClosed
		case it := <-f.items:
			if err := f.take(it, handle); err != nil {
				return err
			}
		case <-f.stop:
			for {
				select {
				case it := <-f.items:
					if err := f.take(it, handle); err != nil {
						return err
					}
				default:
					return f.err
				}
			}
		}
	}
}

// take hands one item on.
func (f *follow) take(it followItem, handle func(FollowEvent) error) error {
	if it.ev != nil {
		return handle(*it.ev)
	}
	if f.progress != nil {
		f.progress(it.progress)
	}
	return nil
}

// specOf is params as a stream's watch, from cursor.
func specOf(params *WatchParams, cursor string) (WatchSpec, error) {
	if params.Resource == "routes" {
		return WatchSpec{}, &WatchError{Code: ErrorCodeInvalidArgument, Message: "the route table is watched alone: Client.Follow"}
	}
	s := WatchSpec{Resource: params.Resource, Key: params.Key, Prefix: params.Prefix, Cursor: cursor}
	if params.Uid != nil {
		s.Uid = *params.Uid
	}
	if params.ChannelType != nil {
		s.ChannelType = *params.ChannelType
	}
	if params.ChannelId != nil {
		s.ChannelId = *params.ChannelId
	}
	s.Prev = params.Prev != nil && *params.Prev
	s.Linearizable = params.Linearizable != nil && *params.Linearizable
	return s, nil
}

// drop forgets f once its Follow returns, and has its watch cancelled on
// the stream it is on.
func (w *Watcher) drop(f *follow) {
	close(f.gone)
	w.mu.Lock()
	delete(w.follows, f.spec.WatchId)
	if f.on != nil && f.on == w.stream {
		w.toCancel = append(w.toCancel, f.spec.WatchId)
	}
	w.mu.Unlock()
	w.poke()
}

func (w *Watcher) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run opens a stream while w has follows, on its servers in turn, waiting
// a bounded back-off between attempts, until Close.
func (w *Watcher) run() {
	defer close(w.done)
	wait := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		for w.idle() {
			select {
			case <-w.ctx.Done():
				return
			case <-w.kick:
			}
		}
		delivered := w.serve(w.servers[attempt%len(w.servers)])
		if delivered {
			wait = 100 * time.Millisecond
		}
		select {
		case <-w.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, w.maxWait)
	}
}

func (w *Watcher) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.follows) == 0
}

// errMoveStream ends a stream whose node refused a watch for now too often
// in a row: the next server may serve its slots.
var errMoveStream = errors.New("client: a watch was refused for now three times: moving the stream")

// serve opens a stream on server and reads it until it ends; it reports
// whether it handed on a change.
func (w *Watcher) serve(server string) (delivered bool) {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	req, err := NewOpenWatchStreamRequest(server, nil)
	if err != nil {
		return false
	}
	req = req.WithContext(ctx)
	if w.c.applyEditors(ctx, req, nil) != nil {
		return false
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return false
	}
	var sc *streamConn
	var adds sync.WaitGroup
	defer func() {
		cancel()
		adds.Wait()
		w.mu.Lock()
		if w.stream == sc {
			w.stream, w.toCancel = nil, nil
		}
		w.mu.Unlock()
	}()
	_ = ReadSSE(resp.Body, func(ev SSEEvent) error {
		switch ev.Event {
		case "stream":
			var o WatchStreamOpened
			if err := json.Unmarshal(ev.Data, &o); err != nil || sc != nil {
				return fmt.Errorf("client: watch stream: first event %s", ev.Data)
			}
			sc = &streamConn{server: server, id: o.StreamId, cancel: cancel}
			w.mu.Lock()
			w.stream, w.toCancel = sc, nil
			if o.MaxWatches > 0 {
				w.max = o.MaxWatches
			}
			for _, f := range w.follows {
				f.on, f.fails = nil, 0
			}
			w.mu.Unlock()
			adds.Go(func() { w.adds(ctx, sc) })
		case "change":
			var c WatchStreamChange
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				return fmt.Errorf("client: watch stream: change %s: %w", ev.Data, err)
			}
			fe := &FollowEvent{WatchEvent: WatchEvent{HashSlot: c.HashSlot, Seq: c.Seq, TimeMs: c.TimeMs, Changes: c.Changes}, Cursor: c.Cursor}
			if w.hand(ctx, sc, c.WatchId, c.Cursor, followItem{ev: fe}) {
				delivered = true
			}
		case "progress":
			var p WatchStreamProgress
			if err := json.Unmarshal(ev.Data, &p); err != nil {
				return fmt.Errorf("client: watch stream: progress %s: %w", ev.Data, err)
			}
			for _, pos := range p.Watches {
				w.hand(ctx, sc, pos.WatchId, pos.Cursor, followItem{progress: pos.Cursor})
			}
		case "error":
			var e WatchStreamError
			if err := json.Unmarshal(ev.Data, &e); err != nil || e.WatchId == 0 {
				return errors.New("client: watch stream ended") // open another
			}
			return w.ended(sc, e.WatchId, e.Cursor, &WatchError{Code: e.Error.Code, Message: e.Error.Message})
		}
		return nil
	})
	return delivered
}

// hand queues it for watch id of stream sc and moves the follow's cursor
// past it (a progress item only when the follow wants them); false when
// the watch is not one of sc's (cancelled, or of an earlier stream).
func (w *Watcher) hand(ctx context.Context, sc *streamConn, id uint64, cursor string, it followItem) bool {
	w.mu.Lock()
	f := w.follows[id]
	if f == nil || f.on != sc {
		w.mu.Unlock()
		return false
	}
	f.fails, f.fresh = 0, false
	w.mu.Unlock()
	if it.ev != nil || f.progress != nil {
		select {
		case f.items <- it:
		case <-f.gone:
			return false
		case <-ctx.Done():
			return false
		}
	}
	w.mu.Lock()
	f.spec.Cursor = cursor
	w.mu.Unlock()
	return true
}

// ended takes the end of watch id on sc: one the server refuses for now
// (slow_consumer, route_not_ready, rate_limited) is added again from its
// cursor after a back-off — moving the whole stream to the next server
// after three in a row — and any other ends its Follow.
func (w *Watcher) ended(sc *streamConn, id uint64, cursor string, we *WatchError) error {
	w.mu.Lock()
	f := w.follows[id]
	if f == nil || f.on != sc {
		w.mu.Unlock()
		return nil
	}
	if cursor != "" {
		f.spec.Cursor = cursor
	}
	if !retryableWatchCode(we.Code) {
		delete(w.follows, id)
		we.Cursor = f.spec.Cursor
		w.mu.Unlock()
		f.finish(we)
		return nil
	}
	f.on, f.fails = nil, f.fails+1
	f.retryAt = time.Now().Add(min(w.maxWait, 100*time.Millisecond<<min(f.fails-1, 16)))
	move := f.fails >= 3
	w.mu.Unlock()
	if move {
		return errMoveStream
	}
	w.poke()
	return nil
}

// retryableWatchCode reports whether a watch ended or refused with code
// may be followed again: the refusals for now (a multiplexed stream's watch
// has no HTTP status of its own, so they go by code; Follow's retryableWatch
// asks it after the status).
func retryableWatchCode(code ErrorCode) bool {
	switch code {
	case ErrorCodeSlowConsumer, ErrorCodeRouteNotReady, ErrorCodeRateLimited, ErrorCodeQueueFull, ErrorCodeBusy,
		ErrorCodeTimeout, ErrorCodeNotLeader, ErrorCodeSlotMigrating, ErrorCodeWrongGroup:
		return true
	}
	return false
}

// Bounds of one add request: the server's count, and well under its
// default body bound (1 MiB) — a watch of every hash slot carries a cursor
// of a kilobyte or more.
const (
	maxAdd      = 1000
	maxAddBytes = 256 << 10
)

// adds adds the follows not on sc yet and cancels those that ended, until
// ctx ends; an add sc's node cannot take ends sc.
func (w *Watcher) adds(ctx context.Context, sc *streamConn) {
	for {
		w.mu.Lock()
		var batch []addSpec
		var next time.Time
		now := time.Now()
		size := 0
		for _, f := range w.follows {
			switch {
			case f.on != nil:
			case f.retryAt.After(now):
				if next.IsZero() || f.retryAt.Before(next) {
					next = f.retryAt
				}
			case len(batch) >= maxAdd || size >= maxAddBytes:
			case f.alone && len(batch) > 0, len(batch) == 1 && batch[0].alone:
			default:
				f.on, f.fresh = sc, true
				batch = append(batch, addSpec{WatchSpec: f.spec, alone: f.alone})
				size += 256 + len(f.spec.Cursor) + len(f.spec.Resource) + len(f.spec.Uid) + len(f.spec.ChannelId) +
					len(deref(f.spec.Key)) + len(deref(f.spec.Prefix))
			}
		}
		cancels := w.toCancel
		w.toCancel = nil
		w.mu.Unlock()
		for _, id := range cancels {
			w.cancelOn(ctx, sc, id)
		}
		if len(batch) > 0 {
			if !w.add(ctx, sc, batch) {
				sc.cancel()
				return
			}
			continue
		}
		var timer <-chan time.Time
		if !next.IsZero() {
			timer = time.After(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-timer:
		}
	}
}

// addSpec is a watch to add, and whether it goes alone.
type addSpec struct {
	WatchSpec
	alone bool
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// add posts batch to sc; false when sc's node did not take the request.
// A batch refused whole (400, 413) is sent again a watch a request, so
// that only a watch the server refuses as it is ends its follow.
func (w *Watcher) add(ctx context.Context, sc *streamConn, batch []addSpec) bool {
	specs := make([]WatchSpec, len(batch))
	for i, b := range batch {
		specs[i] = b.WatchSpec
	}
	req, err := NewAddWatchesRequest(sc.server, sc.id, WatchStreamAdd{Watches: specs})
	if err != nil {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req = req.WithContext(rctx)
	if w.c.applyEditors(rctx, req, nil) != nil {
		return false
	}
	resp, err := w.c.Client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	var out WatchStreamAdded
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || len(out.Watches) != len(batch) {
		switch {
		case resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestEntityTooLarge:
			return false
		case len(batch) > 1:
			w.alone(sc, specs)
		default:
			w.refuse(specs, watchErrorOf(resp.StatusCode, body)) // the watch, not the stream
		}
		return true
	}
	for _, pos := range out.Watches {
		if pos.Error != nil {
			if w.ended(sc, pos.WatchId, "", &WatchError{Code: pos.Error.Code, Message: pos.Error.Message}) != nil {
				return false // moving the stream
			}
			continue
		}
		w.started(sc, pos)
	}
	return true
}

// started takes the position a watch added to sc starts from, as a
// single stream's first progress event gives it: unless the stream handed
// on something of it first, it is the follow's cursor now, and its
// Progress hears of it.
func (w *Watcher) started(sc *streamConn, pos WatchPosition) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.follows[pos.WatchId]
	if f == nil || f.on != sc || !f.fresh {
		return
	}
	f.fresh = false
	f.spec.Cursor = pos.Cursor
	if f.progress != nil {
		select {
		case f.items <- followItem{progress: pos.Cursor}:
		default: // its queue is full: the next position will do
		}
	}
}

// alone has the follows of a batch refused whole added again one a
// request.
func (w *Watcher) alone(sc *streamConn, batch []WatchSpec) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range batch {
		if f := w.follows[s.WatchId]; f != nil && f.on == sc {
			f.on, f.alone = nil, true
		}
	}
}

// refuse ends the follows of batch with we: the server refused them as
// they are.
func (w *Watcher) refuse(batch []WatchSpec, we *WatchError) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range batch {
		if f := w.follows[s.WatchId]; f != nil {
			delete(w.follows, s.WatchId)
			e := *we
			e.Cursor = f.spec.Cursor
			f.finish(&e)
		}
	}
}

// cancelOn cancels watch id on sc, best effort: a watch left on a stream
// is dropped by hand, and ends with the stream.
func (w *Watcher) cancelOn(ctx context.Context, sc *streamConn, id uint64) {
	req, err := NewCancelWatchRequest(sc.server, sc.id, id)
	if err != nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req = req.WithContext(rctx)
	if w.c.applyEditors(rctx, req, nil) != nil {
		return
	}
	if resp, err := w.c.Client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
}
