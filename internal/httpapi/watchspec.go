package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

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

// parseWatch reads and checks a watch request: its query, and the cursor
// to resume from in Last-Event-ID or ?cursor=.
func parseWatch(r *http.Request) (*watchSpec, error) {
	q, err := queryParams(r)
	if err != nil {
		return nil, err
	}
	cursor := r.Header.Get("Last-Event-ID")
	if cursor == "" {
		cursor = q.Get("cursor")
	}
	return parseWatchQuery(q, cursor)
}

// parseWatchQuery checks a watch given as query parameters (GET
// /v1/watch's, or a multiplexed watch's, muxWatchJSON.query) and the cursor
// text to resume from ("": none).
func parseWatchQuery(q url.Values, cursor string) (*watchSpec, error) {
	var err error
	sp := &watchSpec{tables: map[meta.Table]watchResource{}}
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
	if sp.progress, err = progressParam(q); err != nil {
		return nil, err
	}
	if sp.routes {
		return sp, nil // it starts with the whole table: no cursor to resume from
	}
	if cursor != "" {
		c, err := watch.ParseCursor(cursor)
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

// progressParam parses ?progress_interval_ms= (a watch's or a stream's;
// default defaultProgressInterval).
func progressParam(q url.Values) (time.Duration, error) {
	v := q.Get("progress_interval_ms")
	if v == "" {
		return defaultProgressInterval, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	d := time.Duration(ms) * time.Millisecond
	if err != nil || d < minProgressInterval || d > maxProgressInterval {
		return 0, invalid("progress_interval_ms must be %d..%d", minProgressInterval.Milliseconds(), maxProgressInterval.Milliseconds())
	}
	return d, nil
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

// allSlots is every hash slot, in order.
func allSlots() []slotstore.HashSlot {
	all := make([]slotstore.HashSlot, slotstore.HashSlotCount)
	for i := range all {
		all[i] = slotstore.HashSlot(i)
	}
	return all
}
