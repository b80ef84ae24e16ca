package console

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
	"github.com/slotmeta/slotmeta/internal/testkit/operatortest"
)

// get fetches path from ts (with a session of token, if any) and returns
// the answer without following redirects.
func get(t *testing.T, ts *httptest.Server, sess *auth.Sessions, token, path string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	if token != "" {
		req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: sess.Open(token)})
	}
	resp, err := (&http.Client{CheckRedirect: noRedirect}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// rowIDs are the slot/seq of a tail's rows, in order.
func rowIDs(doc string, t *testing.T) []string {
	var ids []string
	for _, n := range byTestID(parse(t, doc), "change-row") {
		ids = append(ids, attr(n, "data-slot")+"/"+attr(n, "data-seq"))
	}
	return ids
}

// TestGroupChangeTail: a group's tail shows the newest changes of the
// slots it owns, newest first across them, at most tailRows, values cut;
// a slot whose older records retention dropped gives those it keeps; a
// slot not on this node is named; the other group's slots are not read
// (and many busy slots are read within the bound).
func TestGroupChangeTail(t *testing.T) {
	f, log := newFake(), operatortest.NewChangeLog()
	const base = 1_800_000_000_000
	var all []watch.Record
	put := func(s slotstore.HashSlot, timeMs int64, key, value string) {
		all = append(all, log.Append(watch.Record{Slot: s, TimeMs: timeMs, Kind: watch.Put, Table: meta.TableKV,
			Key: meta.KVKey(0, s, key)[8:], Value: meta.EncodeKV(&meta.KV{Key: key, Value: []byte(value)})}))
	}
	// Group 2 owns the odd slots: 60 changes in slot 5, three in slot 7
	// between them, two kept of ten in slot 3 (the newest), slot 9 away.
	for i := range 60 {
		put(5, base+int64(i)*10, fmt.Sprintf("k5-%d", i), "v")
	}
	for i := range 3 {
		put(7, base+5+int64(i)*290, fmt.Sprintf("k7-%d", i), "v")
	}
	put(5, base+700, "<script>alert(1)</script>", strings.Repeat("x", 1000))
	for i := range 10 {
		put(3, base+1000+int64(i), fmt.Sprintf("k3-%d", i), "v")
	}
	log.Trim(3, 8)
	all = slices.DeleteFunc(all, func(r watch.Record) bool { return r.Slot == 3 && r.Seq <= 8 })
	log.SetAway(9, true)
	// Group 1's slots are busy: 100 changes in each of its 128.
	for s := slotstore.HashSlot(0); s < slotstore.HashSlotCount; s += 2 {
		for i := range 100 {
			log.Append(watch.Record{Slot: s, TimeMs: base + int64(i), Kind: watch.Delete, Table: meta.TableKV, Key: []byte("k")})
		}
	}

	ts := httptest.NewServer(Handler(Config{Source: f, Changes: log}))
	defer ts.Close()
	resp, body := get(t, ts, nil, "", "/console/fragments/groups/2/changes")
	if resp.StatusCode != 200 || strings.Contains(body, "<html") {
		t.Fatalf("fragment: %d %s", resp.StatusCode, body)
	}
	if given := log.Given(); given > 2*tailRows {
		t.Errorf("group 2's tail read %d records for %d rows", given, tailRows)
	}
	slices.SortStableFunc(all, func(a, b watch.Record) int { return cmp.Compare(b.TimeMs, a.TimeMs) })
	var want []string
	for _, r := range all[:tailRows] {
		want = append(want, fmt.Sprintf("%d/%d", r.Slot, r.Seq))
	}
	if got := rowIDs(body, t); !slices.Equal(got, want) {
		t.Fatalf("rows (slot/seq):\n got %v\nwant %v", got, want)
	}
	doc := parse(t, body)
	if got := text(one(t, doc, "changes-not-local")); !strings.Contains(got, "1 hash slot of 128") || !strings.HasSuffix(got, ": 9") {
		t.Errorf("the slot away: %q", got)
	}
	long := text(byTestID(doc, "change-value")[2]) // after slot 3's two
	if n := utf8.RuneCountInString(long); n > maxValueChars+1 || !strings.HasSuffix(long, "…") || !strings.Contains(long, `"Value":"xxx`) {
		t.Errorf("a long value is shown as %d characters: %q", n, long)
	}
	if strings.Contains(body, "<script>alert") || !strings.Contains(text(byTestID(doc, "change-key")[2]), `key=<script>alert(1)</script>`) {
		t.Errorf("the key is not shown escaped: %s", body)
	}

	// The group page renders the same fragment, re-fetched by htmx when
	// its watch reports a change in one of the group's slots (live.js).
	_, page := get(t, ts, nil, "", "/console/groups/2")
	if !slices.Equal(rowIDs(page, t), want) || !strings.Contains(page, `hx-get="/console/fragments/groups/2/changes"`) {
		t.Errorf("the group page lacks its change tail")
	}
	var odd []string
	for s := 1; s < slotstore.HashSlotCount; s += 2 {
		odd = append(odd, strconv.Itoa(s))
	}
	if !strings.Contains(page, `data-slots="`+strings.Join(odd, ",")+`"`) || !strings.Contains(page, `data-watch="{&#34;resource&#34;:&#34;system_uids,`) {
		t.Errorf("the group page's tail does not name its watch and its slots")
	}

	// 128 busy slots: one record each, then pages of tailPage.
	before := log.Given()
	if _, body := get(t, ts, nil, "", "/console/fragments/groups/1/changes"); len(rowIDs(body, t)) != tailRows {
		t.Fatalf("group 1: %d rows", len(rowIDs(body, t)))
	}
	if given := log.Given() - before; given > 128+tailRows*tailPage {
		t.Errorf("group 1's tail read %d records", given)
	}
}

// TestChannelChangeTail: a channel's page shows its own rows' changes and
// none of the rest of its slot; the form goes there; reading needs the
// read role.
func TestChannelChangeTail(t *testing.T) {
	f, log := newFake(), operatortest.NewChangeLog()
	s := slotstore.HashSlotOfString("room-1")
	member := meta.EncodeChannelMember(&meta.ChannelMember{UID: "u1"})
	log.Append(watch.Record{Slot: s, TimeMs: 1, Kind: watch.Put, Table: meta.TableSubscriber,
		Key: meta.ChannelMemberKey(0, s, meta.TableSubscriber, 2, "room-1", "u1")[8:], Value: member})
	log.Append(watch.Record{Slot: s, TimeMs: 2, Kind: watch.Put, Table: meta.TableSubscriber, // another type: another channel
		Key: meta.ChannelMemberKey(0, s, meta.TableSubscriber, 3, "room-1", "u1")[8:], Value: member})
	log.Append(watch.Record{Slot: s, TimeMs: 3, Kind: watch.Put, Table: meta.TableKV, Key: []byte("room-1"),
		Value: meta.EncodeKV(&meta.KV{Key: "room-1"})})
	log.Append(watch.Record{Slot: s, TimeMs: 4, Kind: watch.Clear, Table: meta.TableDenylist,
		Key: meta.ChannelListPrefix(0, s, meta.TableDenylist, 2, "room-1")[8:]})
	log.Append(watch.Record{Slot: s, TimeMs: 5, Kind: watch.Delete, Table: meta.TableChannel,
		Key: meta.ChannelKey(0, s, meta.TableChannel, 2, "room-1")[8:]})

	authn, err := auth.New(map[string]auth.Role{readTok: auth.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	sess := auth.NewSessions(auth.SessionsConfig{})
	ts := httptest.NewServer(Handler(Config{Source: f, Auth: authn, Sessions: sess, Changes: log}))
	defer ts.Close()
	for p, want := range map[string]int{"/console/channels/2/room-1/changes": http.StatusSeeOther, "/console/channels": http.StatusSeeOther,
		"/console/fragments/channels/2/room-1/changes": htmxStopPolling, "/console/fragments/groups/1/changes": htmxStopPolling} {
		if resp, body := get(t, ts, sess, "", p); resp.StatusCode != want || strings.Contains(body, "change-row") {
			t.Errorf("anonymous %s: %d, want %d", p, resp.StatusCode, want)
		}
	}
	if given := log.Given(); given != 0 {
		t.Errorf("anonymous requests read %d records", given)
	}
	resp, _ := get(t, ts, sess, readTok, "/console/channels?channel_type=2&channel_id=room-1")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/channels/2/room-1/changes" {
		t.Fatalf("the form: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := get(t, ts, sess, readTok, "/console/channels/2/room-1/changes")
	want := []string{fmt.Sprintf("%d/5", s), fmt.Sprintf("%d/4", s), fmt.Sprintf("%d/1", s)}
	if got := rowIDs(body, t); resp.StatusCode != 200 || !slices.Equal(got, want) {
		t.Fatalf("channel page: %d, rows %v, want %v", resp.StatusCode, got, want)
	}
	doc := parse(t, body)
	var kinds []string
	for _, n := range byTestID(doc, "change-kind") {
		kinds = append(kinds, text(n))
	}
	if !slices.Equal(kinds, []string{"delete", "clear", "put"}) || !strings.Contains(text(byTestID(doc, "change-key")[2]), "channel=2/room-1 uid=u1") ||
		!strings.Contains(body, `hx-get="/console/fragments/channels/2/room-1/changes"`) {
		t.Fatalf("channel page: kinds %v\n%s", kinds, body)
	}
	if _, frag := get(t, ts, sess, readTok, "/console/fragments/channels/2/room-1/changes"); !slices.Equal(rowIDs(frag, t), want) || strings.Contains(frag, "<html") {
		t.Fatalf("channel fragment: %s", frag)
	}
	for _, bad := range []string{"/console/channels?channel_type=0&channel_id=room-1", "/console/channels/2/a%20b/changes"} {
		resp, body := get(t, ts, sess, readTok, bad)
		if resp.StatusCode == http.StatusSeeOther || len(byTestID(parse(t, body), "channel-problem")) != 1 {
			t.Errorf("%s: %d, no problem shown", bad, resp.StatusCode)
		}
	}
}

// TestValueJSONShowsARowsOwnFields: a stored row reads as its fields in
// order, zero ones left out — an embedded struct's fields among them as
// the row's own (a channel row embeds what the client set on it), not as
// one nested object that would fill the line with zeros.
func TestValueJSONShowsARowsOwnFields(t *testing.T) {
	ch := &meta.Channel{ChannelInfo: meta.ChannelInfo{Type: 2, ID: "room-1", Ban: true}, SubscriberCount: 3, Revision: 9}
	got := valueJSON(meta.TableChannel, meta.EncodeChannel(ch))
	if want := `{"Type":2,"ID":"room-1","Ban":true,"SubscriberCount":3,"Revision":9}`; got != want {
		t.Fatalf("channel row: %s, want %s", got, want)
	}
	kv := valueJSON(meta.TableKV, meta.EncodeKV(&meta.KV{Key: "k", Value: []byte("<v>"), Revision: 4}))
	if want := `{"Key":"k","Value":"<v>","Revision":4}`; kv != want {
		t.Fatalf("business key: %s, want %s", kv, want)
	}
}
