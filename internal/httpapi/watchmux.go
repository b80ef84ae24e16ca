package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// The multiplexed watch stream (issue 49): many watches over one SSE
// stream, as etcd's gRPC watch streams carry many watchers, so that a
// thousand watches cost a connection, a goroutine and a wake-up per change
// batch instead of a thousand of each.
//
//	GET    /v1/watch/stream                        opens it: a `stream` event names it
//	POST   /v1/watch/stream/{stream_id}            adds watches (muxAddJSON)
//	DELETE /v1/watch/stream/{stream_id}/{watch_id} cancels one
//
// A watch is what GET /v1/watch takes, as JSON, with an id its client
// chooses (so that the client knows a change's watch before the POST is
// answered). Its events carry the id and the cursor to resume it from: a
// `change` (watchEvent's fields), a `progress` listing the watches that
// caught up to a position they were not told yet, an `error` that ends one
// watch (the stream goes on) — or, without a watch id, the stream. One
// goroutine serves the stream (serveMux): it owns the watches; the POST
// and DELETE handlers open and close them and hand them over through
// muxOp. The stream lives on the node that opened it: adds and cancels
// are sent to that node (another answers not_found), and a client that
// loses the stream opens another, here or elsewhere, and adds its watches
// again with their cursors. The stream id, 128 random bits, is known only
// to its opener and is what lets a request add or cancel its watches.

// Bounds of multiplexed streams.
const (
	streamPath = "/v1/watch/stream"
	// consoleStreamPath is where the console opens the stream for its live
	// tails (it forwards it to streamPath, internal/console/stream.go): a
	// stream too, without the request deadline.
	consoleStreamPath = "/console/stream"
	// maxStreamsPerNode bounds the multiplexed streams one node serves
	// (each watch also counts against the hub's MaxSubscribers).
	maxStreamsPerNode = 1_000
	// maxWatchesPerStream bounds one stream's watches.
	maxWatchesPerStream = 10_000
	// groupsPerTurn bounds what one watch delivers before the others have
	// their turn: a watch that reads a long backlog from the change log
	// does not hold up the rest of the stream.
	groupsPerTurn = 64
)

// muxStream is one multiplexed stream as the request handlers reach it.
type muxStream struct {
	id   string
	bell *watch.Bell
	// ops is unbuffered: a handed-over op is one the serving goroutine
	// took, so no opened watch is left in a channel nobody reads.
	ops  chan muxOp
	done chan struct{} // closed when the serving goroutine leaves
}

// muxOp is an add (the watches opened, to serve) or a cancel (of watch
// id), answered on reply: for an add, the error of each watch refused
// (nil: taken); for a cancel, one error (nil or not found).
type muxOp struct {
	add    []*muxWatch
	cancel uint64
	reply  chan []error // buffered 1: the serving goroutine never waits
}

// muxWatch is one watch of a stream, owned by the serving goroutine once
// handed over.
type muxWatch struct {
	id     uint64
	sp     *watchSpec
	st     *watch.Stream
	first  []watch.Record // what the opening poll returned, to deliver first
	told   string         // the cursor last sent
	queued bool           // in muxSet.turn
}

// muxStreamJSON is the data of a stream's first event.
type muxStreamJSON struct {
	StreamID   string `json:"stream_id"`
	MaxWatches int    `json:"max_watches"`
}

// muxChangeJSON is the data of a multiplexed change event.
type muxChangeJSON struct {
	WatchID uint64 `json:"watch_id"`
	Cursor  string `json:"cursor"`
	watchEvent
}

// muxPositionJSON is a watch's position in a progress event or an add's
// answer, or why it was refused or ended.
type muxPositionJSON struct {
	WatchID uint64     `json:"watch_id"`
	Cursor  string     `json:"cursor,omitempty"`
	Error   *errorJSON `json:"error,omitempty"`
}

// muxProgressJSON is the data of a multiplexed progress event.
type muxProgressJSON struct {
	TimeMs  int64             `json:"time_ms"`
	Watches []muxPositionJSON `json:"watches"`
}

// muxErrorJSON is the data of an error event: one watch's end (WatchID
// set), or the stream's.
type muxErrorJSON struct {
	WatchID uint64    `json:"watch_id,omitempty"`
	Cursor  string    `json:"cursor,omitempty"`
	Error   errorJSON `json:"error"`
}

// openMux is GET /v1/watch/stream.
func (a *api) openMux(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r)
	if err != nil {
		return err
	}
	for name := range q {
		if name != "progress_interval_ms" {
			return invalid("unknown parameter %q: a stream takes progress_interval_ms only; its watches are added by POST %s/{stream_id}", name, streamPath)
		}
	}
	progress, err := progressParam(q)
	if err != nil {
		return err
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	ms := &muxStream{id: hex.EncodeToString(id[:]), bell: watch.NewBell(), ops: make(chan muxOp), done: make(chan struct{})}
	if err := a.streams.add(ms); err != nil {
		return err
	}
	defer a.streams.remove(ms)
	defer close(ms.done)
	a.metrics.watchStreams.Inc()
	defer a.metrics.watchStreams.Dec()
	s := startSSE(w, a.metrics)
	if s.sendRaw("stream", mustJSON(muxStreamJSON{StreamID: ms.id, MaxWatches: maxWatchesPerStream})) != nil {
		return nil
	}
	a.serveMux(r.Context(), s, ms, progress)
	return nil
}

// serveMux serves a stream until its client or the node goes: it delivers
// what the watches that rang have, a turn each, flushing once a round;
// takes the adds and cancels; and every progress interval brings each
// watch's position up to date and tells those that moved.
func (a *api) serveMux(ctx context.Context, s *sse, ms *muxStream, progress time.Duration) {
	set := &muxSet{byID: map[uint64]*muxWatch{}, byStream: map[*watch.Stream]*muxWatch{}, gauge: a.metrics.watchMuxed}
	defer set.closeAll()
	tick := time.NewTicker(progress)
	defer tick.Stop()
	for {
		for _, st := range ms.bell.Rung() {
			if mw := set.byStream[st]; mw != nil {
				set.queue(mw)
			}
		}
		turn := set.turn
		set.turn = nil
		for _, mw := range turn {
			mw.queued = false
			if set.byID[mw.id] != mw {
				continue // cancelled since it was queued: its stream is closed
			}
			again, ended, err := a.muxTurn(ctx, s, mw)
			switch {
			case err != nil:
				return // the client is gone
			case ended:
				set.remove(mw)
			case again:
				set.queue(mw)
			}
		}
		if len(turn) > 0 && s.flush() != nil {
			return
		}
		var wake <-chan struct{} = ms.bell.Ready()
		if len(set.turn) > 0 {
			ready := make(chan struct{}) // another turn at once, after what is waiting
			close(ready)
			wake = ready
		}
		select {
		case <-ctx.Done():
			return
		case <-a.stopping:
			e := slotstore.Errorf(slotstore.CodeRouteNotReady, "this node is shutting down: open a stream on another node and add the watches from their cursors")
			a.metrics.watchEnds.WithLabelValues(string(e.Code)).Inc()
			_ = s.sendRaw("error", mustJSON(muxErrorJSON{Error: errorJSONOf(e)}))
			return
		case op := <-ms.ops:
			op.reply <- set.apply(op)
			for _, mw := range op.add {
				// A turn even with nothing first: a change published between
				// its opening and now rang for a stream not yet known here.
				set.queue(mw)
			}
		case <-wake:
		case <-tick.C:
			told := []muxPositionJSON{}
			for _, mw := range set.byID {
				// The hub moves a position past what the filter does not
				// want without ringing: a poll brings it up to date.
				if mw.first == nil {
					recs, err := mw.st.Poll(ctx)
					if err != nil {
						if a.muxEnd(s, mw, err) != nil {
							return
						}
						set.remove(mw)
						continue
					}
					if mw.first = recs; recs != nil {
						set.queue(mw)
						continue
					}
				}
				if cur := cursorText(mw.st); mw.first == nil && mw.st.CaughtUp() && cur != mw.told {
					told = append(told, muxPositionJSON{WatchID: mw.id, Cursor: cur})
					mw.told = cur
				}
			}
			if a.sendProgress(s, told) != nil {
				return
			}
		}
	}
}

// muxSet is a stream's watches, owned by its serving goroutine: by id, by
// the stream its bell names, and those with a turn coming (each once).
type muxSet struct {
	byID     map[uint64]*muxWatch
	byStream map[*watch.Stream]*muxWatch
	turn     []*muxWatch
	gauge    prometheus.Gauge // the node's multiplexed watches
}

// queue gives mw a turn in the next round, once, while it is the set's.
func (m *muxSet) queue(mw *muxWatch) {
	if !mw.queued && m.byID[mw.id] == mw {
		mw.queued = true
		m.turn = append(m.turn, mw)
	}
}

// remove closes mw and forgets it.
func (m *muxSet) remove(mw *muxWatch) {
	mw.st.Close()
	delete(m.byID, mw.id)
	delete(m.byStream, mw.st)
	m.gauge.Dec()
}

// closeAll closes every watch: the stream ended.
func (m *muxSet) closeAll() {
	for _, mw := range m.byID {
		m.remove(mw)
	}
}

// progressPerEvent bounds the positions one progress event lists: a
// position of a watch of every hash slot is a kilobyte or more, and a
// client reads an event as one line (client.ReadSSE: 16 MiB at most).
// A variable for its test.
var progressPerEvent = 1000

// sendProgress sends the positions told as progress events of at most
// progressPerEvent each (one, empty, when there are none: it keeps an idle
// stream alive).
func (a *api) sendProgress(s *sse, told []muxPositionJSON) error {
	now := time.Now().UnixMilli()
	for {
		n := min(len(told), progressPerEvent)
		if err := s.sendRaw("progress", mustJSON(muxProgressJSON{TimeMs: now, Watches: told[:n]})); err != nil {
			return err
		}
		if told = told[n:]; len(told) == 0 {
			return nil
		}
	}
}

// apply takes an add or a cancel into the set.
func (m *muxSet) apply(op muxOp) []error {
	if op.add == nil {
		mw := m.byID[op.cancel]
		if mw == nil {
			return []error{slotstore.Errorf(slotstore.CodeNotFound, "no watch %d on this stream", op.cancel)}
		}
		m.remove(mw)
		return []error{nil}
	}
	errs := make([]error, len(op.add))
	for i, mw := range op.add {
		switch {
		case m.byID[mw.id] != nil:
			errs[i] = slotstore.Errorf(slotstore.CodeConflict, "watch %d is on this stream already: cancel it first, or choose another id", mw.id)
		case len(m.byID) >= maxWatchesPerStream:
			errs[i] = &slotstore.Error{Code: slotstore.CodeRateLimited, RetryAfter: time.Second,
				Message: "this stream carries as many watches as it may (" + strconv.Itoa(maxWatchesPerStream) + "): open another"}
		default:
			m.byID[mw.id] = mw
			m.byStream[mw.st] = mw
			m.gauge.Inc()
		}
	}
	return errs
}

// muxTurn delivers what mw has, groupsPerTurn groups at most (again: it
// may have more). ended: mw ended with an error event; err: the client
// is gone.
func (a *api) muxTurn(ctx context.Context, s *sse, mw *muxWatch) (again, ended bool, err error) {
	recs := mw.first
	mw.first = nil
	if recs == nil {
		if recs, err = mw.st.Poll(ctx); err != nil {
			return false, true, a.muxEnd(s, mw, err)
		}
	}
	for n := 0; recs != nil; n++ {
		if n == groupsPerTurn {
			mw.first = recs
			return true, false, nil
		}
		ev, err := mw.sp.event(recs)
		if err != nil {
			a.log.Error("httpapi: watch", "err", err)
			return false, true, a.muxEnd(s, mw, err)
		}
		if ev != nil {
			mw.told = cursorText(mw.st)
			b, err := json.Marshal(muxChangeJSON{WatchID: mw.id, Cursor: mw.told, watchEvent: *ev})
			if err != nil {
				return false, true, a.muxEnd(s, mw, err)
			}
			if err := s.put("change", "", b); err != nil {
				return false, false, err
			}
		}
		if recs, err = mw.st.Poll(ctx); err != nil {
			return false, true, a.muxEnd(s, mw, err)
		}
	}
	return false, false, nil
}

// muxEnd sends the error event that ends mw (the error is a write's: the
// client is gone).
func (a *api) muxEnd(s *sse, mw *muxWatch, cause error) error {
	e := watchError(cause)
	a.metrics.watchEnds.WithLabelValues(string(e.Code)).Inc()
	b, err := json.Marshal(muxErrorJSON{WatchID: mw.id, Cursor: cursorText(mw.st), Error: errorJSONOf(e)})
	if err != nil {
		return err
	}
	return s.put("error", "", b)
}

// errStreamGone answers an add or cancel for a stream that ended while
// the request was handled.
var errStreamGone = slotstore.Errorf(slotstore.CodeNotFound, "the watch stream ended: open another and add the watches from their cursors")

// handOver passes op to ms's serving goroutine and returns its reply.
func (ms *muxStream) handOver(ctx context.Context, op muxOp) ([]error, error) {
	op.reply = make(chan []error, 1)
	select {
	case ms.ops <- op:
		return <-op.reply, nil
	case <-ms.done:
		return nil, errStreamGone
	case <-ctx.Done():
		return nil, &slotstore.Error{Code: slotstore.CodeTimeout, Err: ctx.Err(),
			Message: "the watch stream did not take the request in time: try again"}
	}
}

// muxStreams is a node's multiplexed streams by id.
type muxStreams struct {
	mu      sync.Mutex
	streams map[string]*muxStream
}

func (g *muxStreams) add(ms *muxStream) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.streams) >= maxStreamsPerNode {
		return &slotstore.Error{Code: slotstore.CodeRateLimited, RetryAfter: time.Second,
			Message: "this node serves as many watch streams as it may: retry later or on another node"}
	}
	if g.streams == nil {
		g.streams = map[string]*muxStream{}
	}
	g.streams[ms.id] = ms
	return nil
}

func (g *muxStreams) remove(ms *muxStream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.streams, ms.id)
}

// get returns stream id, or not_found.
func (g *muxStreams) get(id string) (*muxStream, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ms := g.streams[id]; ms != nil {
		return ms, nil
	}
	return nil, slotstore.Errorf(slotstore.CodeNotFound,
		"no watch stream %q on this node: a stream's watches are added on the node that opened it", id)
}

// cursorText is st's position as a cursor's text.
func cursorText(st *watch.Stream) string {
	c := st.Cursor()
	return c.String()
}
