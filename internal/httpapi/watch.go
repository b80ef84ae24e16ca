package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
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

// watchResource is one resource a watch can name: a watched table, called
// what meta calls its rows (meta.Table.Resource), or the route table.
type watchResource struct {
	table meta.Table
	by    watchRoute
	show  func([]byte) (any, error) // the stored row as the API shows it
}

func (w watchResource) name() string {
	if w.by == byRoutes {
		return "routes"
	}
	return w.table.Resource()
}

// watchRoute is what routes a resource's rows: which filter it takes.
type watchRoute uint8

const (
	byUID watchRoute = iota
	byChannel
	byKey
	bySystem // the system uids: all in one slot
	byRoutes // the route table and leaders: not slot data (routesStream)
)

// shown turns a row's decoder and its API shape into show.
func shown[K, E, J any](rw row[K, E, J]) func([]byte) (any, error) {
	return func(b []byte) (any, error) {
		e, err := rw.decode(b)
		if err != nil {
			return nil, err
		}
		return rw.out(e), nil
	}
}

var watchResources = []watchResource{
	{meta.TableUser, byUID, shown(userRow)},
	{meta.TableDevice, byUID, shown(deviceRow)},
	{meta.TablePlugin, byUID, shown(pluginRow)},
	{meta.TableMembership, byUID, shown(membershipRow)},
	{meta.TableCmdBinding, byUID, shown(cmdBindingRow)},
	{meta.TableSystemUID, bySystem, shown(systemUIDRow)},
	{meta.TableKV, byKey, shown(kvRow)},
	{meta.TableChannel, byChannel, shown(channelRow)},
	{meta.TableRuntime, byChannel, shown(runtimeRow)},
	{meta.TableSubscriber, byChannel, shown(memberRow(meta.ListSubscribers))},
	{meta.TableDenylist, byChannel, shown(memberRow(meta.ListDenylist))},
	{meta.TableAllowlist, byChannel, shown(memberRow(meta.ListAllowlist))},
	{0, byRoutes, nil},
}

// watchPath is the stream's path (withDeadline leaves it alone).
const watchPath = "/v1/watch"

// Bounds of a watch request.
const (
	defaultProgressInterval = 5 * time.Second
	minProgressInterval     = 100 * time.Millisecond
	maxProgressInterval     = time.Minute
	// watchWriteTimeout bounds the writes to the client: a client that
	// stops reading is cut within it (at least half of it: the deadline
	// moves every half, sse.setDeadline), not waited for (the server's
	// WriteTimeout is for one whole answer, which a stream is not).
	watchWriteTimeout = 30 * time.Second
)

// watchSpec is what a watch request asks for.
type watchSpec struct {
	tables  map[meta.Table]watchResource
	uid     string
	channel *meta.ChanRef
	key     string
	prefix  *string
	prev    bool
	// linearizable starts a watch without a cursor at what the slots'
	// groups had committed when it began, not at this node's applied state.
	linearizable bool
	progress     time.Duration
	slots        []slotstore.HashSlot
	cursor       *watch.Cursor // nil: from now
	routes       bool          // the route stream (routesStream), not slot data
}

// parseWatch reads and checks a watch request.
func parseWatch(r *http.Request) (*watchSpec, error) {
	q, err := queryParams(r)
	if err != nil {
		return nil, err
	}
	sp := &watchSpec{tables: map[meta.Table]watchResource{}, progress: defaultProgressInterval}
	names := strings.Split(q.Get("resource"), ",")
	if q.Get("resource") == "" {
		return nil, invalid("resource is required: one or more of %s, comma-separated", watchResourceNames())
	}
	routes := map[watchRoute]bool{}
	for _, name := range names {
		i := slices.IndexFunc(watchResources, func(w watchResource) bool { return w.name() == name })
		if i < 0 {
			return nil, invalid("unknown resource %q: one of %s", name, watchResourceNames())
		}
		sp.tables[watchResources[i].table] = watchResources[i]
		routes[watchResources[i].by] = true
	}
	if routes[byRoutes] {
		if len(names) != 1 || len(q) > 2 || len(q) == 2 && q.Get("progress_interval_ms") == "" {
			return nil, invalid("resource=routes is watched alone, with no filter but progress_interval_ms")
		}
		sp.routes = true
	}
	sp.uid = q.Get("uid")
	_, hasKey := q["key"]
	sp.key = q.Get("key")
	if p, ok := q["prefix"]; ok {
		sp.prefix = &p[0]
	}
	if q.Get("channel_type") != "" || q.Get("channel_id") != "" {
		t, err := strconv.ParseUint(q.Get("channel_type"), 10, 8)
		if err != nil || t == 0 || q.Get("channel_id") == "" {
			return nil, invalid("a channel filter needs channel_type (1-255) and channel_id")
		}
		sp.channel = &meta.ChanRef{ChannelType: uint8(t), ChannelID: q.Get("channel_id")}
	}
	filters := 0
	for _, set := range []bool{sp.uid != "", sp.channel != nil, hasKey, sp.prefix != nil} {
		if set {
			filters++
		}
	}
	switch {
	case filters > 1:
		return nil, invalid("at most one of uid, channel_type/channel_id, key and prefix")
	case sp.uid != "" && !onlyRoute(routes, byUID):
		return nil, invalid("uid filters resources of a user only: users, devices, plugins, memberships, cmd_bindings")
	case sp.channel != nil && !onlyRoute(routes, byChannel):
		return nil, invalid("a channel filters resources of a channel only: channels, runtime, subscribers, denylist, allowlist")
	case (hasKey || sp.prefix != nil) && !onlyRoute(routes, byKey):
		return nil, invalid("key and prefix filter kv only")
	case hasKey && (sp.key == "" || len(sp.key) > meta.MaxKeyBytes):
		return nil, invalid("key must be 1..%d bytes", meta.MaxKeyBytes)
	}
	sp.slots = sp.coveredSlots(routes)
	if sp.prev, err = boolParam(q, "prev"); err != nil {
		return nil, err
	}
	if sp.linearizable, err = boolParam(q, "linearizable"); err != nil {
		return nil, err
	}
	if v := q.Get("progress_interval_ms"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		d := time.Duration(ms) * time.Millisecond
		if err != nil || d < minProgressInterval || d > maxProgressInterval {
			return nil, invalid("progress_interval_ms must be %d..%d", minProgressInterval.Milliseconds(), maxProgressInterval.Milliseconds())
		}
		sp.progress = d
	}
	if sp.routes {
		return sp, nil // it starts with the whole table: no cursor to resume from
	}
	text := r.Header.Get("Last-Event-ID")
	if text == "" {
		text = q.Get("cursor")
	}
	if text != "" {
		c, err := watch.ParseCursor(text)
		if err != nil {
			return nil, invalid("cursor: %v", err)
		}
		if !slices.Equal(c.Slots(), sp.slots) {
			return nil, invalid("the cursor covers other hash slots than this watch: resume with the same resources and filter")
		}
		sp.cursor = &c
	}
	return sp, nil
}

func onlyRoute(routes map[watchRoute]bool, want watchRoute) bool {
	return len(routes) == 1 && routes[want]
}

func watchResourceNames() string {
	names := make([]string, len(watchResources))
	for i, w := range watchResources {
		names[i] = w.name()
	}
	return strings.Join(names, ", ")
}

// coveredSlots is the hash slots the watch's rows live in, in order.
func (sp *watchSpec) coveredSlots(routes map[watchRoute]bool) []slotstore.HashSlot {
	var key string
	switch {
	case sp.uid != "":
		key = sp.uid
	case sp.channel != nil:
		key = sp.channel.ChannelID
	case sp.key != "":
		key = sp.key
	case len(routes) == 1 && routes[bySystem]:
		key = meta.SystemUIDsRouteKey
	default:
		return allSlots()
	}
	return []slotstore.HashSlot{slotstore.HashSlotOfString(key)}
}

// wants reports whether the watch delivers a change of table t with key k.
func (sp *watchSpec) wants(t meta.Table, k meta.KeyParts) bool {
	if _, ok := sp.tables[t]; !ok {
		return false
	}
	switch {
	case sp.uid != "":
		return k.UID == sp.uid
	case sp.channel != nil:
		return k.ChannelType == sp.channel.ChannelType && k.ChannelID == sp.channel.ChannelID
	case sp.prefix != nil:
		return strings.HasPrefix(k.Key, *sp.prefix)
	case sp.key != "":
		return k.Key == sp.key
	}
	return true
}

// watchEvent is the data of a change event: one command's changes in one
// hash slot.
type watchEvent struct {
	HashSlot slotstore.HashSlot `json:"hash_slot"`
	Seq      uint64             `json:"seq"` // the slot's sequence of the last change in it
	TimeMs   int64              `json:"time_ms"`
	Changes  []watchChange      `json:"changes"`
}

type watchChange struct {
	Kind     string       `json:"kind"` // put, delete, clear
	Resource string       `json:"resource"`
	Key      watchKeyJSON `json:"key"`
	Value    any          `json:"value,omitempty"`
	Prev     any          `json:"prev,omitempty"`
}

// watchKeyJSON is what a change's row is: the parts its resource has (a
// clear names only the parent: the channel of a list, the user of devices).
type watchKeyJSON struct {
	UID         string `json:"uid,omitempty"`
	Key         string `json:"key,omitempty"`
	ChannelType uint8  `json:"channel_type,omitempty"`
	ChannelID   string `json:"channel_id,omitempty"`
	DeviceFlag  *uint8 `json:"device_flag,omitempty"`
	PluginNo    string `json:"plugin_no,omitempty"`
}

// filter is the watch's filter for the hub (watch.Filter): it runs on a
// replica's apply goroutine for each record of the covered slots, so it
// only parses the key. A key that does not parse is wanted: the stream
// reports it (event).
func (sp *watchSpec) filter() watch.Filter {
	keyed := sp.uid != "" || sp.channel != nil || sp.key != "" || sp.prefix != nil
	return func(r watch.Record) bool {
		if _, ok := sp.tables[r.Table]; !ok || !keyed {
			return ok
		}
		k, err := meta.ParseKey(r.Table, r.Key, r.Kind == watch.Clear)
		return err != nil || sp.wants(r.Table, k)
	}
}

// event turns one delivered group into the event to send (nil: nothing in
// it is wanted).
func (sp *watchSpec) event(recs []watch.Record) (*watchEvent, error) {
	last := recs[len(recs)-1]
	ev := &watchEvent{HashSlot: last.Slot, Seq: last.Seq, TimeMs: last.TimeMs}
	for _, r := range recs {
		k, err := meta.ParseKey(r.Table, r.Key, r.Kind == watch.Clear)
		if err != nil {
			return nil, fmt.Errorf("watch: slot %d seq %d: %w", r.Slot, r.Seq, err)
		}
		if !sp.wants(r.Table, k) {
			continue
		}
		res := sp.tables[r.Table]
		ch := watchChange{Kind: r.Kind.String(), Resource: res.name(),
			Key: watchKeyJSON{UID: k.UID, Key: k.Key, ChannelType: k.ChannelType, ChannelID: k.ChannelID, PluginNo: k.Plugin}}
		if r.Table == meta.TableDevice && r.Kind != watch.Clear {
			flag := k.DeviceFlag
			ch.Key.DeviceFlag = &flag
		}
		if r.Kind == watch.Put {
			if ch.Value, err = res.show(r.Value); err != nil {
				return nil, fmt.Errorf("watch: slot %d seq %d: %w", r.Slot, r.Seq, err)
			}
		}
		if sp.prev && len(r.Prev) > 0 {
			if ch.Prev, err = res.show(r.Prev); err != nil {
				return nil, fmt.Errorf("watch: slot %d seq %d: %w", r.Slot, r.Seq, err)
			}
		}
		ev.Changes = append(ev.Changes, ch)
	}
	if len(ev.Changes) == 0 {
		return nil, nil
	}
	return ev, nil
}

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

// allSlots is every hash slot, in order.
func allSlots() []slotstore.HashSlot {
	all := make([]slotstore.HashSlot, slotstore.HashSlotCount)
	for i := range all {
		all[i] = slotstore.HashSlot(i)
	}
	return all
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
	src := a.be.Watches()
	ctx := r.Context()
	from := sp.cursor
	if from == nil {
		now := watch.Now
		if sp.linearizable {
			now = watch.NowLinearizable
		}
		c, err := now(ctx, src.Log, sp.slots...)
		if err != nil {
			return watchError(err)
		}
		from = &c
	}
	st, err := watch.Open(src.Hub, src.Log, *from, sp.filter())
	if err != nil {
		return watchError(err)
	}
	defer st.Close()
	// The first poll before the answer starts: a compacted position is a
	// plain 410. The first mark is the position before what that poll
	// returned (Poll moves the cursor past it): a mark is never ahead of
	// what was delivered.
	start := st.Cursor()
	first, err := st.Poll(ctx)
	if err != nil {
		return watchError(err)
	}
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

// progressJSON is the data of a progress event.
type progressJSON struct {
	TimeMs int64 `json:"time_ms"` // the serving node's clock
}

// sse writes Server-Sent Events.
type sse struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	m        *metrics
	deadline time.Time // of the connection's writes (setDeadline)
	buf      []byte
}

// startSSE answers 200 with a stream's headers. (The server's ReadTimeout
// does not end it: net/http clears the read deadline of the background
// read it runs while a handler serves; TestWatchOutlivesTheServersTimeouts.)
func startSSE(w http.ResponseWriter, m *metrics) *sse {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: rc, m: m}
}

func (s *sse) send(event string, cur watch.Cursor, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return s.frame(event, cur.String(), b)
}

// frame writes one event (id "": none), counts it and flushes it.
func (s *sse) frame(event, id string, data []byte) error {
	s.buf = append(append(s.buf[:0], "event: "...), event...)
	if id != "" {
		s.buf = append(append(s.buf, "\nid: "...), id...)
	}
	s.buf = append(append(append(s.buf, "\ndata: "...), data...), "\n\n"...)
	s.m.watchEvents.WithLabelValues(event).Inc()
	s.setDeadline()
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

// setDeadline keeps the connection's write deadline watchWriteTimeout
// ahead, moving it only once half of it has passed (a deadline set per
// event costs a timer update on every write).
func (s *sse) setDeadline() {
	if now := time.Now(); s.deadline.Sub(now) < watchWriteTimeout/2 {
		s.deadline = now.Add(watchWriteTimeout)
		_ = s.rc.SetWriteDeadline(s.deadline)
	}
}

// fail ends a stream with an error event.
func (s *sse) fail(cur watch.Cursor, e *slotstore.Error) {
	s.m.watchEnds.WithLabelValues(string(e.Code)).Inc()
	_ = s.send("error", cur, errorBody{Error: errorJSONOf(e)})
}

// routesStream is GET /v1/watch?resource=routes: the route table with each
// group's live leader (GET /v1/cluster/routes' answer) as a `routes` event
// at the start and again at every change of the node's routing snapshot
// (a table revision, a leader or term), coalesced: a watcher always gets
// the latest. Progress events keep an idle stream open. Nothing to resume
// from: a reconnect starts with the whole table again.
func (a *api) routesStream(w http.ResponseWriter, r *http.Request, sp *watchSpec) error {
	changed := a.be.Watches().RoutesChanged
	if changed == nil {
		return slotstore.Errorf(slotstore.CodeFailedPrecondition, "this node does not stream its routes")
	}
	ctx := r.Context()
	next := changed()
	first, err := a.snapshot()
	if err != nil {
		return err
	}
	if first.Table() == nil {
		return slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing table yet")
	}
	s := startSSE(w, a.metrics)
	tick := time.NewTicker(sp.progress)
	defer tick.Stop()
	var last []byte
	for snap := first; ; {
		if snap.Table() != nil {
			b, err := json.Marshal(routesOf(snap))
			if err != nil {
				return nil
			}
			if !bytes.Equal(b, last) {
				if s.sendRaw("routes", b) != nil {
					return nil
				}
				last = b
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.stopping:
			return nil // the client opens the stream on another node
		case <-next:
		case <-tick.C:
			if s.sendRaw("progress", mustJSON(progressJSON{TimeMs: time.Now().UnixMilli()})) != nil {
				return nil
			}
		}
		next = changed()
		snap = a.be.Routes()
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// sendRaw writes an event without an id (the route stream has no position).
func (s *sse) sendRaw(event string, data []byte) error { return s.frame(event, "", data) }
