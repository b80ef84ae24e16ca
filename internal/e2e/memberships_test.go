package e2e

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/client"
)

// routeHeaders fails unless a keyed answer carries the route headers.
func routeHeaders(t *testing.T, what string, r response) {
	t.Helper()
	for _, h := range []string{"X-Hash-Slot", "X-Slot-Group", "X-Leader-Node", "X-Leader-Term", "X-Config-Epoch", "X-Route-Revision"} {
		if r.header.Get(h) == "" {
			t.Fatalf("%s: the answer lacks %s: %v", what, h, r.header)
		}
	}
}

// walk pages through a listing with limit and returns the items' keys, in
// order; it fails if a page is over the limit or the walk does not end.
func (s *server) walk(path string, limit int, key func(item map[string]any) string) []string {
	s.t.Helper()
	var keys []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5000 {
			s.t.Fatalf("%s: listing does not end", path)
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		r := s.must(200, "GET", fmt.Sprintf("%s%slimit=%d&cursor=%s", path, sep, limit, url.QueryEscape(cursor)), "")
		var page struct {
			Items      []map[string]any `json:"items"`
			NextCursor string           `json:"next_cursor"`
		}
		r.json(&page)
		if page.Items == nil {
			s.t.Fatalf("%s: items is not a list: %s", path, r.body)
		}
		if len(page.Items) > limit {
			s.t.Fatalf("%s: page of %d over limit %d", path, len(page.Items), limit)
		}
		for _, it := range page.Items {
			keys = append(keys, key(it))
		}
		if page.NextCursor == "" {
			return keys
		}
		cursor = page.NextCursor
	}
}

// onceInOrder fails unless got is want exactly: every item once, in order.
func onceInOrder(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func channelKey(it map[string]any) string {
	return fmt.Sprintf("%v/%v", it["channel_type"], it["channel_id"])
}

func TestMembershipsEndToEnd(t *testing.T) {
	s := oneNode(t)
	const base = "/v1/users/ada/memberships"

	// Create (PUT upsert answers 200), read back, route headers.
	r := s.must(200, "PUT", base+"/2/group-1", `{"join_seq":10,"read_seq":20,"deleted_to_seq":5}`)
	routeHeaders(t, "put membership", r)
	var m client.Membership
	r.json(&m)
	if m.Uid != "ada" || m.ChannelType != 2 || m.ChannelId != "group-1" || m.JoinSeq != 10 || m.ReadSeq != 20 ||
		m.DeletedToSeq != 5 || m.Tombstone || m.ActivatedAtMs == 0 || m.ActivatedAtMs != m.CreatedAtMs || m.Revision == 0 {
		t.Fatalf("created %+v", m)
	}
	var got client.Membership
	g := s.must(200, "GET", base+"/2/group-1", "")
	routeHeaders(t, "get membership", g)
	if g.header.Get("X-Served-By") == "" || g.header.Get("X-Applied-Index") == "" {
		t.Fatalf("read without X-Served-By / X-Applied-Index: %v", g.header)
	}
	g.json(&got)
	if got != m {
		t.Fatalf("read %+v, wrote %+v", got, m)
	}

	// Update: the floors never move back; join_seq is set.
	s.must(200, "PUT", base+"/2/group-1", `{"join_seq":11,"read_seq":3,"deleted_to_seq":1}`).json(&got)
	if got.JoinSeq != 11 || got.ReadSeq != 20 || got.DeletedToSeq != 5 || got.CreatedAtMs != m.CreatedAtMs || got.ActivatedAtMs != m.ActivatedAtMs {
		t.Fatalf("upsert %+v", got)
	}

	// read: a lower read_seq answers 200 with the row unchanged.
	var before, after client.Membership
	s.must(200, "GET", base+"/2/group-1", "").json(&before)
	s.must(200, "POST", base+"/2/group-1/read", `{"read_seq":7}`).json(&after)
	if after != before {
		t.Fatalf("a lower read_seq changed the row:\n%+v\n%+v", before, after)
	}
	s.must(200, "POST", base+"/2/group-1/read", `{"read_seq":30}`).json(&after)
	if after.ReadSeq != 30 || after.Revision <= before.Revision {
		t.Fatalf("read forward %+v", after)
	}
	// hide: deleted_to_seq, monotonic.
	s.must(200, "POST", base+"/2/group-1/hide", `{"to_seq":2}`).json(&after)
	if after.DeletedToSeq != 5 {
		t.Fatalf("lower hide %+v", after)
	}
	s.must(200, "POST", base+"/2/group-1/hide", `{"to_seq":25}`).json(&after)
	if after.DeletedToSeq != 25 {
		t.Fatalf("hide %+v", after)
	}
	// activate: the leader's time, no body.
	s.must(200, "POST", base+"/2/group-1/activate", "").json(&after)
	if after.ActivatedAtMs < m.ActivatedAtMs || after.UpdatedAtMs != after.ActivatedAtMs {
		t.Fatalf("activate %+v", after)
	}

	// Tombstone: hidden from the list, readable with tombstone:true.
	s.must(200, "PUT", base+"/1/left", `{"join_seq":1,"tombstone":true}`)
	s.must(200, "GET", base+"/1/left", "").json(&got)
	if !got.Tombstone {
		t.Fatalf("tombstone reads %+v", got)
	}
	if keys := s.walk(base, 10, channelKey); !slices.Equal(keys, []string{"2/group-1"}) {
		t.Fatalf("listing with a tombstone: %v", keys)
	}

	// Missing memberships.
	for p, body := range map[string]string{"/read": `{"read_seq":1}`, "/hide": `{"to_seq":1}`} {
		if r := s.do("POST", base+"/9/none"+p, body); r.code != 404 || r.errCode() != "not_found" {
			t.Fatalf("POST %s on a missing membership: %d %s", p, r.code, r.body)
		}
	}
	s.must(404, "POST", base+"/9/none/activate", "")
	s.must(404, "GET", base+"/9/none", "")

	// Delete: 204, then 404.
	s.must(204, "DELETE", base+"/1/left", "")
	s.must(404, "DELETE", base+"/1/left", "")
	s.must(404, "GET", base+"/1/left", "")
}

func TestMembershipListNewestActivityFirst(t *testing.T) {
	s := oneNode(t)
	const base = "/v1/users/grace/memberships"
	// Explicit activation times (one tie, broken by channel order), written
	// out of order.
	rows := []struct {
		ch string
		at int64
	}{{"1/c-100", 100}, {"2/c-900", 900}, {"1/c-500", 500}, {"1/c-700b", 700}, {"1/c-700a", 700}, {"3/c-300", 300}, {"1/c-800", 800}}
	for _, r := range rows {
		s.must(200, "PUT", base+"/"+r.ch, fmt.Sprintf(`{"join_seq":1,"activated_at_ms":%d}`, r.at))
	}
	want := []string{"2/c-900", "1/c-800", "1/c-700a", "1/c-700b", "1/c-500", "3/c-300", "1/c-100"}
	for _, limit := range []int{1, 2, 1000} {
		onceInOrder(t, fmt.Sprintf("limit %d", limit), s.walk(base, limit, channelKey), want)
	}
	// Activation moves one to the front (the leader's clock is far past 900).
	s.must(200, "POST", base+"/1/c-100/activate", "")
	want = append([]string{"1/c-100"}, want[:len(want)-1]...)
	for _, limit := range []int{1, 2} {
		onceInOrder(t, fmt.Sprintf("after activation, limit %d", limit), s.walk(base, limit, channelKey), want)
	}
	// Another user's memberships are another listing.
	s.must(200, "PUT", "/v1/users/grace2/memberships/1/x", `{}`)
	onceInOrder(t, "grace2", s.walk("/v1/users/grace2/memberships", 1, channelKey), []string{"1/x"})
	onceInOrder(t, "nobody", s.walk("/v1/users/nobody/memberships", 2, channelKey), nil)
}

func TestCmdBindingsEndToEnd(t *testing.T) {
	s := oneNode(t)
	const base = "/v1/users/linus/cmd-bindings"
	var b, b2 client.CmdBinding
	r := s.must(200, "PUT", base+"/1/cmd", `{"start_seq":10}`)
	routeHeaders(t, "put cmd binding", r)
	r.json(&b)
	if b.StartSeq != 10 || b.AckSeq != 0 || b.ChannelId != "cmd" {
		t.Fatalf("created %+v", b)
	}
	s.must(200, "POST", base+"/1/cmd/ack", `{"ack_seq":15}`).json(&b)
	if b.AckSeq != 15 {
		t.Fatalf("ack %+v", b)
	}
	s.must(200, "POST", base+"/1/cmd/ack", `{"ack_seq":12}`).json(&b2)
	if b2 != b {
		t.Fatalf("a lower ack changed the row: %+v → %+v", b, b2)
	}
	s.must(200, "PUT", base+"/1/cmd", `{"start_seq":3}`).json(&b2)
	if b2.StartSeq != 3 || b2.AckSeq != 15 {
		t.Fatalf("re-put %+v", b2)
	}
	s.must(200, "GET", base+"/1/cmd", "")
	// Independent of membership.
	s.must(404, "GET", "/v1/users/linus/memberships/1/cmd", "")
	s.must(404, "POST", base+"/1/none/ack", `{"ack_seq":1}`)

	for _, ch := range []string{"3/z", "2/b", "2/a", "1/m"} {
		s.must(200, "PUT", base+"/"+ch, `{"start_seq":0}`)
	}
	want := []string{"1/cmd", "1/m", "2/a", "2/b", "3/z"}
	for _, limit := range []int{1, 2, 100} {
		onceInOrder(t, fmt.Sprintf("limit %d", limit), s.walk(base, limit, channelKey), want)
	}
	s.must(204, "DELETE", base+"/1/cmd", "")
	s.must(404, "DELETE", base+"/1/cmd", "")
	s.must(404, "GET", base+"/1/cmd", "")
}

func TestMembershipBadInput(t *testing.T) {
	s := oneNode(t)
	c0 := s.node.Stats().Commands
	for _, tc := range []struct {
		method, path, body string
		field              string
	}{
		{"PUT", "/v1/users/u/memberships/0/g", `{}`, "channel_type"},
		{"PUT", "/v1/users/u/memberships/256/g", `{}`, "channel_type"},
		{"PUT", "/v1/users/u/memberships/01/g", `{}`, "channel_type"},
		{"PUT", "/v1/users/u/memberships/x/g", `{}`, "channel_type"},
		{"PUT", "/v1/users/u/memberships/1/a%20b", `{}`, "channel_id"},
		{"PUT", "/v1/users/u/memberships/1/a%2Fb", `{}`, "channel_id"},
		{"PUT", "/v1/users/u/memberships/1/" + strings.Repeat("c", 129), `{}`, "channel_id"},
		{"PUT", "/v1/users/u/memberships/1/g", `{"read_seq":-1}`, "read_seq"},
		{"PUT", "/v1/users/u/memberships/1/g", `{"activated_at_ms":-5}`, "activated_at_ms"},
		{"PUT", "/v1/users/u/memberships/1/g", `{"bogus":1}`, "bogus"},
		{"POST", "/v1/users/u/memberships/1/g/read", `{}`, "read_seq"},
		{"POST", "/v1/users/u/memberships/1/g/hide", `{"read_seq":1}`, "read_seq"},
		{"PUT", "/v1/users/u/cmd-bindings/1/g", `{}`, "start_seq"},
		{"POST", "/v1/users/u/cmd-bindings/1/g/ack", `{"ack_seq":"1"}`, "ack_seq"},
		{"GET", "/v1/users/u/memberships?limit=1001", "", "limit"},
		{"GET", "/v1/users/u/memberships?cursor=AAAA", "", "cursor"},
		{"GET", "/v1/users/u/cmd-bindings?cursor=%%", "", ""},
	} {
		r := s.do(tc.method, tc.path, tc.body)
		if r.code != 400 || r.errCode() != "invalid_argument" || (tc.field != "" && !strings.Contains(string(r.body), `"field":"`+tc.field)) {
			t.Errorf("%s %s %s: %d %s, want 400 naming %q", tc.method, tc.path, tc.body, r.code, r.body, tc.field)
		}
	}
	if c1 := s.node.Stats().Commands; c1 != c0 {
		t.Fatalf("rejected requests proposed %d commands", c1-c0)
	}
	// A cursor of one listing is refused by another.
	for i := range 3 {
		s.must(200, "PUT", fmt.Sprintf("/v1/users/u/cmd-bindings/1/c%d", i), `{"start_seq":1}`)
	}
	c0 = s.node.Stats().Commands // the three puts above were real writes
	var page client.CmdBindingPage
	s.must(200, "GET", "/v1/users/u/cmd-bindings?limit=1", "").json(&page)
	if r := s.do("GET", "/v1/users/u/memberships?cursor="+deref(page.NextCursor), ""); r.code != 400 {
		t.Fatalf("another listing's cursor: %d %s", r.code, r.body)
	}
	if c1 := s.node.Stats().Commands; c1 != c0 {
		t.Fatalf("rejected requests proposed %d commands", c1-c0)
	}
}
