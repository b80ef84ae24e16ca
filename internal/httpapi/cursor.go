package httpapi

import (
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// cursorVersion is the first byte of every cross-slot listing's cursor.
const cursorVersion = 1

// maxCursorLen bounds an encoded cursor: version, slot and a longest key
// (a uid is never longer: limits_test.go).
var maxCursorLen = base64.RawURLEncoding.EncodedLen(3 + maxKeyBytes)

// position is where a cross-slot listing continues: after key after in
// hash slot slot, or at the start of slot when after is "". Slot
// HashSlotCount means the listing is done.
type position struct {
	slot  slotstore.HashSlot
	after string
}

// encodeCursor renders p as an opaque cursor: base64url (no padding) of
// version(1) | hash slot (u16 BE) | key. It names a position, not a node.
func encodeCursor(p position) string {
	b := make([]byte, 3, 3+len(p.after))
	b[0] = cursorVersion
	binary.BigEndian.PutUint16(b[1:], uint16(p.slot))
	return base64.RawURLEncoding.EncodeToString(append(b, p.after...))
}

// decodeCursor parses encodeCursor's output, whose key must pass valid (a
// problem function such as uidProblem); "" is the start of the listing.
func decodeCursor(s string, valid func(string) string) (position, error) {
	if s == "" {
		return position{}, nil
	}
	bad := invalidField("cursor", "is not a cursor this API issued")
	if len(s) > maxCursorLen {
		return position{}, bad
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < 3 || b[0] != cursorVersion {
		return position{}, bad
	}
	p := position{slot: slotstore.HashSlot(binary.BigEndian.Uint16(b[1:])), after: string(b[3:])}
	if !p.slot.Valid() || (p.after != "" && valid(p.after) != "") {
		return position{}, bad
	}
	return p, nil
}

// listUsers is GET /v1/users?cursor=&limit=&consistency=: every user, in
// (hash slot, uid) order, walked with one ScanUsers query per run of hash
// slots owned by one group.
func (a userRoutes) listUsers(w http.ResponseWriter, r *http.Request) error {
	return slotWalk[meta.UserPage, *meta.User, userJSON]{name: "ScanUsers", out: userOut, valid: uidProblem,
		keyOf: func(u *meta.User) string { return u.UID },
		query: func(run slotRun) meta.For[*meta.UserPage] {
			return &meta.ScanUsers{FromSlot: run.from, ToSlot: run.to, AfterUID: run.after, Limit: run.want}
		}, rows: func(p *meta.UserPage) ([]*meta.User, bool) { return p.Users, p.More }}.serve(a.api, w, r)
}

// slotRun is one query of a cross-slot listing: the hash slots [from, to],
// all owned by one group under the routing table of the request, starting
// after key after in from ("" from its start), at most want items.
type slotRun struct {
	from, to slotstore.HashSlot
	after    string
	want     int
}

// slotWalk is a listing of rows that live in the hash slot of their key,
// across every hash slot in (hash slot, key) order: GET /v1/users, GET
// /v1/plugins/{plugin_no}/users, GET /v1/kv.
type slotWalk[P, T, J any] struct {
	name  string                          // the query's name, should one answer nothing
	query func(run slotRun) meta.For[*P]  // one run's query
	rows  func(*P) (items []T, more bool) // an answer's items, and whether more follow
	out   func(T) J                       // an item as the API shows it
	keyOf func(T) string                  // an item's key (whose hash slot must be the item's)
	valid func(string) string             // a key's problem, for the cursor ("" if none)
	size  func(T) int                     // an item's bytes, bounding a page to maxPageBytes (nil: not counted)
}

// maxPageBytes bounds what a listing whose items count their size
// (slotWalk.size) puts in one page; the page then ends early, with a
// cursor.
const maxPageBytes = 4 << 20

// serve parses ?limit=, ?consistency= and ?cursor=, sets X-Route-Revision,
// and reads the walk's query once per run of consecutive hash slots owned
// by one group, until the page is full (limit, or maxPageBytes) or hash
// slot 255 is done. A page may come back short, even empty, with a
// cursor; the cursor is left out when the listing is done. The cursor
// names a position (hash slot, last key), never a node or a group, so a
// listing survives leader changes and routing changes: a hash slot moved
// to another group between two pages is read from there, and a key is
// listed once, in its slot, whichever group holds it.
func (sw slotWalk[P, T, J]) serve(a *api, w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r)
	if err != nil {
		return err
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	c, err := consistencyParam(q)
	if err != nil {
		return err
	}
	cur, _, err := single(q, "cursor")
	if err != nil {
		return err
	}
	pos, err := decodeCursor(cur, sw.valid)
	if err != nil {
		return err
	}
	snap, err := a.snapshot()
	if err != nil {
		return err
	}
	table := snap.Table()
	if table == nil {
		return slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing table yet")
	}
	w.Header().Set(hdrRouteRevision, strconv.FormatUint(table.Revision(), 10))
	watchPos := a.watchFrom(r, allSlots()...)

	got := make([]T, 0, min(limit, defaultPageSize))
	bytes := 0
	for pos.slot < slotstore.HashSlotCount && len(got) < limit && bytes < maxPageBytes {
		end := pos.slot // the last hash slot of the run owned by pos.slot's group
		for end+1 < slotstore.HashSlotCount && table.Group(end+1) == table.Group(pos.slot) {
			end++
		}
		want := limit - len(got)
		p, _, err := meta.Read(r.Context(), a.be, sw.query(slotRun{from: pos.slot, to: end, after: pos.after, want: want}), c)
		if err != nil {
			return err
		}
		if p == nil {
			return internalf("%s answered nothing", sw.name)
		}
		items, more := sw.rows(p)
		if len(items) > want {
			items, more = items[:want], true
		}
		got = append(got, items...)
		if sw.size != nil {
			for _, it := range items {
				bytes += sw.size(it)
			}
		}
		if !more {
			pos = position{slot: end + 1}
			continue
		}
		if len(items) == 0 {
			return internalf("the scan of hash slots %d-%d stopped early without an item", pos.slot, end)
		}
		last := sw.keyOf(items[len(items)-1])
		next := position{slot: slotstore.HashSlotOfString(last), after: last}
		if next.slot < pos.slot || next.slot > end || (next.slot == pos.slot && last <= pos.after) {
			return internalf("the scan of hash slots %d-%d went backwards to %q", pos.slot, end, last)
		}
		pos = next
	}
	page := pageOf(got, false, sw.out, nil)
	if pos.slot < slotstore.HashSlotCount {
		page.NextCursor = encodeCursor(pos)
	}
	setWatchCursor(w, watchPos)
	a.writeJSON(w, r, http.StatusOK, page)
	return nil
}

// Cursor tags of the keyed listings of devices, plugin bindings, system
// UIDs and channel lists (packCursor / unpackCursor, channelroutes.go).
const (
	tagDevices     = 'd'
	tagUserPlugins = 'p'
	tagSystemUIDs  = 'u'
	tagSubscribers = 's'
	tagDenylist    = 'x'
	tagAllowlist   = 'w'
)

// keyedListQuery parses a keyed listing whose cursor position is the last
// key listed: it returns the query and that key ("" from the start), which
// must pass valid (a problem function such as uidProblem).
func keyedListQuery(r *http.Request, tag byte, valid func(string) string) (listQuery, string, error) {
	lq, err := parseListQuery(r)
	if err != nil {
		return listQuery{}, "", err
	}
	after, err := lq.keyAfter(tag, valid)
	return lq, after, err
}

// keyAfter is the key a keyed listing's cursor continues after ("" from
// the start), which must pass valid.
func (lq listQuery) keyAfter(tag byte, valid func(string) string) (string, error) {
	if lq.cursor == "" {
		return "", nil
	}
	pos, err := unpackCursor(lq.cursor, tag)
	if err != nil {
		return "", err
	}
	if valid(string(pos)) != "" {
		return "", invalidField("cursor", "is not a cursor this listing issued")
	}
	return string(pos), nil
}

// userListQuery parses a listing of a user's rows: {uid}, then the list
// query.
func userListQuery(r *http.Request) (string, listQuery, error) {
	uid, err := userFromPath(r)
	if err != nil {
		return "", listQuery{}, err
	}
	lq, err := parseListQuery(r)
	return uid, lq, err
}

// userKeyedList parses a keyed listing of a user's rows (devices, plugin
// bindings): userListQuery's uid and query, and the key its cursor
// continues after.
func userKeyedList(r *http.Request, tag byte, valid func(string) string) (uid string, lq listQuery, after string, err error) {
	if uid, lq, err = userListQuery(r); err != nil {
		return "", listQuery{}, "", err
	}
	after, err = lq.keyAfter(tag, valid)
	return uid, lq, after, err
}

// readPage reads one page of a keyed listing: q for key under the list
// query's consistency and fence. An answer of none is missing's error:
// what the listing is under does not exist, or (noAnswer) the Backend
// broke its contract.
func readPage[P any](a *api, w http.ResponseWriter, r *http.Request, key string, lq listQuery, q meta.For[*P], missing func() error) (*P, error) {
	p, err := read(a, w, r, target{key, lq.fence}, lq.c, q)
	if err == nil && p == nil {
		err = missing()
	}
	return p, err
}

// readWatchedPage is readPage of a listing a watch can follow: the answer
// carries the position to watch it from (watchFrom).
func readWatchedPage[P any](a *api, w http.ResponseWriter, r *http.Request, key string, lq listQuery, q meta.For[*P], missing func() error) (*P, error) {
	pos := a.watchFrom(r, slotstore.HashSlotOfString(key))
	p, err := readPage(a, w, r, key, lq, q, missing)
	if err == nil {
		setWatchCursor(w, pos)
	}
	return p, err
}

// noAnswer is the error of query name answering none where it always
// answers.
func noAnswer(name string) func() error {
	return func() error { return internalf("%s answered nothing", name) }
}

// listPage is the answer of every listing: next_cursor is absent when the
// listing is done.
type listPage[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// wholeList is the answer of a short listing that is always returned whole
// (nodes, groups, tasks, decisions): next_cursor is always there, and
// always empty.
type wholeList[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// whole is items as a wholeList, never rendered as null.
func whole[T any](items []T) wholeList[T] {
	if items == nil {
		items = []T{}
	}
	return wholeList[T]{Items: items}
}

// pageOf is the one way a listing renders its rows: each shown by out, and
// when more follow, a next_cursor after the last (after). items is never
// rendered as null.
func pageOf[E, J any](items []E, more bool, out func(E) J, after func(last E) string) listPage[J] {
	page := listPage[J]{Items: make([]J, 0, len(items))}
	for _, e := range items {
		page.Items = append(page.Items, out(e))
	}
	if more && len(items) > 0 {
		page.NextCursor = after(items[len(items)-1])
	}
	return page
}
