package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// changePages serves the change tails (issue 27): the newest changes of a
// group's hash slots — on the group's page, and as the fragment htmx
// re-fetches — and those of one channel's rows, on a page of its own that a
// form on the groups page opens.
type changePages struct{ *console }

// ChangeRow is one change as a tail shows it.
type ChangeRow struct {
	TimeMs   int64
	Slot     slotstore.HashSlot
	Seq      uint64
	Kind     string        // put, delete, clear
	Resource string        // users, subscribers, … (meta.Table.Resource)
	Key      string        // the parts of the row's key ("channel=2/room-1 uid=u1")
	Channel  *meta.ChanRef // the channel the row names, if any (a link to its tail)
	Value    string        // a put's row as JSON, cut at maxValueChars
}

// ChangesProps is a change tail, newest first.
type ChangesProps struct {
	Rows  []ChangeRow
	Slots int // the hash slots it covers
	// Covered are those slots, in order: a group tail's script fetches
	// only for a change in one of them (stream.go).
	Covered []slotstore.HashSlot
	// Unavailable are the covered slots whose change log is not on this
	// node now (no replica here owns them).
	Unavailable []slotstore.HashSlot
	NoLog       bool // the console was given no change log
	Err         string
	Now         time.Time
}

// ChannelProps is a channel's change page; Ref is nil until a valid
// channel is asked for (Problem says what is wrong with the one asked).
type ChannelProps struct {
	Ref               *meta.ChanRef
	Type, ID, Problem string // as asked, for the form
	Slot              slotstore.HashSlot
	Group             slotstore.GroupID
	Changes           ChangesProps
}

// Bounds of what a row shows.
const (
	maxValueChars = 200
	maxKeyChars   = 160
)

// channelTables are the rows of a channel itself, stored in its hash slot
// (memberships and CMD bindings name a channel but live in the user's).
var channelTables = []meta.Table{meta.TableChannel, meta.TableRuntime, meta.TableSubscriber, meta.TableDenylist, meta.TableAllowlist}

// tail reads the newest changes of slots that keep wants.
func (c changePages) tail(ctx context.Context, slots []slotstore.HashSlot, keep func(watch.Record, meta.KeyParts) bool) ChangesProps {
	p := ChangesProps{Slots: len(slots), Covered: slots, Now: c.now()}
	if c.changes == nil {
		p.NoLog = true
		return p
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := readTail(ctx, c.changes, slots, func(r watch.Record) bool {
		k, _ := meta.ParseKey(r.Table, r.Key, r.Kind == watch.Clear) // unreadable: its row says so
		return keep(r, k)
	}, tailRows, tailScan)
	if err != nil {
		p.Err = errMessage(err)
	}
	p.Unavailable = res.unavailable
	for _, r := range res.recs {
		p.Rows = append(p.Rows, changeRow(r))
	}
	return p
}

// changeRow turns a record into what the tail shows of it.
func changeRow(r watch.Record) ChangeRow {
	row := ChangeRow{TimeMs: r.TimeMs, Slot: r.Slot, Seq: r.Seq, Kind: r.Kind.String(), Resource: r.Table.Resource()}
	k, err := meta.ParseKey(r.Table, r.Key, r.Kind == watch.Clear)
	if err != nil {
		row.Key = "unreadable key: " + err.Error()
		return row
	}
	var parts []string
	if k.ChannelID != "" {
		row.Channel = &meta.ChanRef{ChannelType: k.ChannelType, ChannelID: k.ChannelID}
		parts = append(parts, fmt.Sprintf("channel=%d/%s", k.ChannelType, readable(k.ChannelID)))
	}
	for _, p := range [][2]string{{"uid", k.UID}, {"key", k.Key}, {"plugin", k.Plugin}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+readable(p[1]))
		}
	}
	if r.Table == meta.TableDevice && r.Kind != watch.Clear {
		parts = append(parts, "device_flag="+strconv.Itoa(int(k.DeviceFlag)))
	}
	row.Key = cut(strings.Join(parts, " "), maxKeyChars)
	switch r.Kind {
	case watch.Put:
		row.Value = cut(valueJSON(r.Table, r.Value), maxValueChars)
	case watch.Clear:
		row.Value = "every " + r.Table.Resource() + " row under this key"
	}
	return row
}

// valueJSON is a stored row as compact JSON: its fields in order, those at
// their zero value left out (a business key's value as the text the
// client stored, not as base64). It stops once it passes maxValueChars.
func valueJSON(t meta.Table, b []byte) string {
	v, err := meta.DecodeRow(t, b)
	if err != nil {
		return "undecodable: " + err.Error()
	}
	if kv, ok := v.(*meta.KV); ok {
		v = &struct {
			Key, Value               string
			Revision, CreateRevision uint64
			UpdatedAtMs              int64
		}{kv.Key, string(kv.Value), kv.Revision, kv.CreateRevision, kv.UpdatedAtMs}
	}
	rv := reflect.Indirect(reflect.ValueOf(v))
	if rv.Kind() != reflect.Struct {
		return plainJSON(v)
	}
	var out strings.Builder
	out.WriteByte('{')
	for _, sf := range reflect.VisibleFields(rv.Type()) {
		if out.Len() > maxValueChars {
			break
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			continue // its fields follow, as the row's own (meta.Channel's ChannelInfo)
		}
		f := rv.FieldByIndex(sf.Index)
		if !sf.IsExported() || f.IsZero() {
			continue
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		fmt.Fprintf(&out, "%q:%s", sf.Name, plainJSON(f.Interface()))
	}
	out.WriteByte('}')
	return out.String()
}

// plainJSON is v as JSON with <, > and & as they are (the page escapes
// them; \u003c would only be harder to read).
func plainJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return strconv.Quote(err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// readable is s as it is when it prints plainly, else quoted.
func readable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' {
			return strconv.Quote(s)
		}
	}
	return s
}

// cut is s cut to n characters, marked when cut.
func cut(s string, n int) string {
	i := 0
	for at := range s {
		if i == n {
			return s[:at] + "…"
		}
		i++
	}
	return s
}

// groupChanges is the tail of the hash slots group g owns.
func (c changePages) groupChanges(ctx context.Context, g slotstore.GroupID) ChangesProps {
	var slots []slotstore.HashSlot
	for s, owner := range c.src.SlotMap() {
		if owner == g {
			slots = append(slots, slotstore.HashSlot(s))
		}
	}
	return c.tail(ctx, slots, func(watch.Record, meta.KeyParts) bool { return true })
}

func (c changePages) groupFragment(w http.ResponseWriter, r *http.Request) {
	id, ok := groupID(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	c.render(w, r, http.StatusOK, ChangeTable(c.groupChanges(r.Context(), id)))
}

// channel reads the channel a request names (path or form) and its tail.
func (c changePages) channel(r *http.Request, typ, id string) ChannelProps {
	p := ChannelProps{Type: typ, ID: id}
	t, err := strconv.ParseUint(typ, 10, 8)
	if err != nil {
		p.Problem = "channel_type must be 1 to 255"
	} else {
		p.Problem = meta.ChannelRefProblem(uint8(t), id)
	}
	if p.Problem != "" {
		return p
	}
	ref := meta.ChanRef{ChannelType: uint8(t), ChannelID: id}
	p.Ref, p.Slot = &ref, slotstore.HashSlotOfString(id)
	p.Group = c.src.SlotMap()[p.Slot]
	p.Changes = c.tail(r.Context(), []slotstore.HashSlot{p.Slot}, func(rec watch.Record, k meta.KeyParts) bool {
		return slices.Contains(channelTables, rec.Table) && k.ChannelType == ref.ChannelType && k.ChannelID == ref.ChannelID
	})
	for i := range p.Changes.Rows {
		p.Changes.Rows[i].Channel = nil // every row is of this page's channel: no link to it
	}
	return p
}

func (c changePages) channelPage(w http.ResponseWriter, r *http.Request) {
	p := c.channel(r, r.PathValue("type"), r.PathValue("id"))
	status := http.StatusOK
	if p.Ref == nil {
		status = http.StatusBadRequest
	}
	props := PageProps{Title: "Changes of channel " + p.Type + "/" + p.ID, Nav: "groups", Session: c.session(r), Now: c.now(), Version: c.version}
	c.render(w, r, status, Page(props, ChannelBody(p)))
}

func (c changePages) channelFragment(w http.ResponseWriter, r *http.Request) {
	p := c.channel(r, r.PathValue("type"), r.PathValue("id"))
	if p.Ref == nil {
		http.Error(w, p.Problem, http.StatusBadRequest)
		return
	}
	c.render(w, r, http.StatusOK, ChangeTable(p.Changes))
}

// openChannel is the channel form's GET: a valid channel goes to its page,
// anything else shows the form again, saying what is wrong.
func (c changePages) openChannel(w http.ResponseWriter, r *http.Request) {
	typ, id := strings.TrimSpace(r.URL.Query().Get("channel_type")), strings.TrimSpace(r.URL.Query().Get("channel_id"))
	p := ChannelProps{Type: typ, ID: id}
	if typ != "" || id != "" {
		if p = c.channel(r, typ, id); p.Ref != nil {
			http.Redirect(w, r, channelHref(*p.Ref), http.StatusSeeOther)
			return
		}
	}
	c.full(w, r, "Changes of a channel", "groups", ChannelBody(p))
}

// channelHref is the page of a channel's changes.
func channelHref(ref meta.ChanRef) string {
	return "/console/channels/" + strconv.Itoa(int(ref.ChannelType)) + "/" + url.PathEscape(ref.ChannelID) + "/changes"
}

// channelFragmentHref is the fragment of that page.
func channelFragmentHref(ref meta.ChanRef) string {
	return "/console/fragments" + strings.TrimPrefix(channelHref(ref), "/console")
}
