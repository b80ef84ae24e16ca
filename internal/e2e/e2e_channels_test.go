package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/client"
)

func (s *server) channel(path string) client.Channel {
	s.t.Helper()
	var c client.Channel
	s.must(200, "GET", path, "").json(&c)
	return c
}

func TestChannelsCRUD(t *testing.T) {
	s := oneNode(t)
	r := s.must(201, "POST", "/v1/channels", `{"channel_id":"grp-1","channel_type":2,"ban":true,"allow_stranger":true,"extra":{"owner":"ada"}}`)
	wantRouteHeaders(t, r, "grp-1")
	if r.header.Get("Location") != "/v1/channels/2/grp-1" {
		t.Fatalf("Location %q", r.header.Get("Location"))
	}
	var c1 client.Channel
	r.json(&c1)
	if c1.ChannelId != "grp-1" || c1.ChannelType != 2 || !c1.Ban || c1.Disband || !c1.AllowStranger || r.member("extra") != `{"owner":"ada"}` ||
		c1.SubscriberCount != 0 || !r.has("pending_projection") || c1.PendingProjection != 0 || c1.CreatedAtMs == 0 || c1.Revision == 0 {
		t.Fatalf("created %s", r.body)
	}
	if r := s.do("POST", "/v1/channels", `{"channel_id":"grp-1","channel_type":2}`); r.code != 409 || r.errCode() != "conflict" {
		t.Fatalf("second create: %d %s", r.code, r.body)
	}
	// The same id with another type is another channel (in the same hash slot).
	r = s.must(201, "POST", "/v1/channels", `{"channel_id":"grp-1","channel_type":1}`)
	if r.header.Get("X-Hash-Slot") != fmt.Sprint(uint16(hashSlot("grp-1"))) {
		t.Fatalf("route key is not the channel id: %v", r.header)
	}

	// PUT replaces the flags and extra, keeps the creation time.
	var c2 client.Channel
	r2 := s.must(200, "PUT", "/v1/channels/2/grp-1", `{"large":true,"send_ban":true}`)
	r2.json(&c2)
	if c2.Ban || !c2.Large || !c2.SendBan || c2.AllowStranger || r2.member("extra") != "null" || c2.CreatedAtMs != c1.CreatedAtMs || c2.Revision <= c1.Revision {
		t.Fatalf("after put %s (created %s)", r2.body, r.body)
	}
	s.must(200, "PUT", "/v1/channels/2/grp-1", `{"channel_id":"grp-1","channel_type":2,"disband":true}`)
	if got := s.channel("/v1/channels/2/grp-1"); !got.Disband || got.Large {
		t.Fatalf("after second put %s", js(got))
	}
	// PUT of a new channel creates it.
	s.must(200, "PUT", "/v1/channels/9/fresh", `{}`)
	s.must(200, "GET", "/v1/channels/9/fresh?consistency=local", "")
	s.must(404, "GET", "/v1/channels/3/grp-1", "")

	// Delete: 204, then 404; a channel created again starts empty.
	s.must(200, "POST", "/v1/channels/2/grp-1/subscribers", `{"uids":["a","b"]}`)
	s.must(200, "POST", "/v1/channels/2/grp-1/denylist", `{"uids":["x"]}`)
	s.must(200, "POST", "/v1/channels/2/grp-1/allowlist", `{"uids":["y","z"]}`)
	s.must(200, "POST", "/v1/channels/1/grp-1/subscribers", `{"uids":["a","q"]}`)
	s.must(204, "DELETE", "/v1/channels/2/grp-1", "")
	s.must(404, "DELETE", "/v1/channels/2/grp-1", "")
	s.must(404, "GET", "/v1/channels/2/grp-1", "")
	s.must(404, "GET", "/v1/channels/2/grp-1/subscribers", "")
	s.must(404, "POST", "/v1/channels/2/grp-1/subscribers", `{"uids":["a"]}`)
	s.must(201, "POST", "/v1/channels", `{"channel_id":"grp-1","channel_type":2}`)
	if c := s.channel("/v1/channels/2/grp-1"); c.SubscriberCount != 0 || c.DenylistCount != 0 || c.AllowlistCount != 0 {
		t.Fatalf("recreated channel has counts %s", js(c))
	}
	for _, l := range []string{"subscribers", "denylist", "allowlist"} {
		samePaged(s, "/v1/channels/2/grp-1/"+l, "uid", nil)
		s.must(404, "GET", "/v1/channels/2/grp-1/"+l+"/a", "")
	}
	// The other channel with the same id kept its list.
	samePaged(s, "/v1/channels/1/grp-1/subscribers", "uid", []string{"a", "q"})

	// Bad input: 400 naming the field, never a 5xx, never proposed.
	c0 := s.node.Stats().Commands
	wantBad(s, "channel_type", "POST", "/v1/channels", `{"channel_id":"c"}`)
	wantBad(s, "channel_type", "POST", "/v1/channels", `{"channel_id":"c","channel_type":256}`)
	wantBad(s, "channel_type", "POST", "/v1/channels", `{"channel_id":"c","channel_type":"1"}`)
	wantBad(s, "channel_id", "POST", "/v1/channels", `{"channel_type":1}`)
	wantBad(s, "channel_id", "POST", "/v1/channels", `{"channel_id":"a b","channel_type":1}`)
	wantBad(s, "channel_id", "POST", "/v1/channels", `{"channel_id":"`+strings.Repeat("c", 129)+`","channel_type":1}`)
	wantBad(s, "ban", "POST", "/v1/channels", `{"channel_id":"c","channel_type":1,"ban":"yes"}`)
	wantBad(s, "owner", "POST", "/v1/channels", `{"channel_id":"c","channel_type":1,"owner":"x"}`)
	wantBad(s, "extra", "POST", "/v1/channels", `{"channel_id":"c","channel_type":1,"extra":"`+strings.Repeat("e", 64<<10)+`"}`)
	wantBad(s, "channel_id", "PUT", "/v1/channels/2/grp-1", `{"channel_id":"other"}`)
	wantBad(s, "channel_type", "PUT", "/v1/channels/2/grp-1", `{"channel_type":3}`)
	for _, typ := range []string{"0", "256", "02", "x", "-1"} {
		wantBad(s, "channel_type", "GET", "/v1/channels/"+typ+"/grp-1", "")
		wantBad(s, "channel_type", "PUT", "/v1/channels/"+typ+"/grp-1", `{}`)
	}
	wantBad(s, "channel_id", "GET", "/v1/channels/1/"+strings.Repeat("c", 129), "")
	wantBad(s, "channel_id", "DELETE", "/v1/channels/1/a%20b", "")
	if c1 := s.node.Stats().Commands; c1 != c0 {
		t.Fatalf("rejected requests proposed %d commands", c1-c0)
	}
}

func uidsBody(uids ...string) string {
	b, _ := json.Marshal(map[string][]string{"uids": uids})
	return string(b)
}

func TestChannelListsAndExactCounts(t *testing.T) {
	s := oneNode(t)
	s.must(201, "POST", "/v1/channels", `{"channel_id":"room","channel_type":1}`)
	const ch = "/v1/channels/1/room"
	countOf := func(list string) int64 {
		c := s.channel(ch)
		switch list {
		case "subscribers":
			return c.SubscriberCount
		case "denylist":
			return c.DenylistCount
		}
		return c.AllowlistCount
	}
	add := func(list string, wantAdded, wantCount int64, uids ...string) {
		t.Helper()
		var a client.ChannelMembersAdded
		r := s.must(200, "POST", ch+"/"+list, uidsBody(uids...))
		wantRouteHeaders(t, r, "room")
		r.json(&a)
		if !r.has("added") || !r.has("count") || a.Added != wantAdded || a.Count != wantCount {
			t.Fatalf("add %d uids to %s: %s, want added %d count %d", len(uids), list, r.body, wantAdded, wantCount)
		}
	}
	remove := func(list string, wantRemoved, wantCount int64, uids ...string) {
		t.Helper()
		var a client.ChannelMembersRemoved
		r := s.must(200, "POST", ch+"/"+list+"/remove", uidsBody(uids...))
		r.json(&a)
		if !r.has("removed") || !r.has("count") || a.Removed != wantRemoved || a.Count != wantCount {
			t.Fatalf("remove %d uids from %s: %s, want removed %d count %d", len(uids), list, r.body, wantRemoved, wantCount)
		}
	}

	for li, list := range []string{"subscribers", "denylist", "allowlist"} {
		// Duplicates inside one call and across calls count once.
		add(list, 3, 3, "a", "b", "a", "c", "b")
		add(list, 1, 4, "b", "d", "d")
		add(list, 0, 4, "a", "a")
		remove(list, 1, 3, "a", "a", "zz")
		remove(list, 0, 3, "a", "zz")
		s.must(204, "DELETE", ch+"/"+list+"/b", "")
		s.must(404, "DELETE", ch+"/"+list+"/b", "")
		var m client.ChannelMember
		r := s.must(200, "GET", ch+"/"+list+"/c", "")
		wantRouteHeaders(t, r, "room")
		r.json(&m)
		if m.Uid != "c" || m.AddedAtMs == 0 {
			t.Fatalf("membership test: %s", r.body)
		}
		s.must(404, "GET", ch+"/"+list+"/a", "")
		s.must(404, "GET", ch+"/"+list+"/b", "")
		if got := countOf(list); got != 2 {
			t.Fatalf("%s count %d, want 2", list, got)
		}
		samePaged(s, ch+"/"+list, "uid", []string{"c", "d"})
		// The other lists are untouched by this one (the earlier ones hold c, d).
		c := s.channel(ch)
		counts := []int64{c.SubscriberCount, c.DenylistCount, c.AllowlistCount}
		for lj := range counts {
			want := int64(0)
			if lj <= li {
				want = 2
			}
			if counts[lj] != want {
				t.Fatalf("after %s: counts %v", list, counts)
			}
		}
	}

	// A bigger list, paged in uid order, every item exactly once.
	var uids []string
	for i := 0; i < 57; i++ {
		uids = append(uids, fmt.Sprintf("m-%03d", (i*37)%57))
	}
	add("subscribers", 57, 59, uids...)
	want := append(slices.Clone(uids), "c", "d")
	slices.Sort(want)
	samePaged(s, ch+"/subscribers", "uid", want)

	// Random adds and removes with duplicates: the count always equals the
	// listed members.
	rng := rand.New(rand.NewPCG(1, 2))
	set := map[string]bool{}
	for _, u := range want {
		set[u] = true
	}
	for round := 0; round < 25; round++ {
		var batch []string
		for range 1 + rng.IntN(30) {
			batch = append(batch, fmt.Sprintf("r-%02d", rng.IntN(40)))
		}
		var changed int64
		for _, u := range batch {
			if round%2 == 0 && !set[u] {
				set[u] = true
				changed++
			} else if round%2 == 1 && set[u] {
				delete(set, u)
				changed++
			}
		}
		if round%2 == 0 {
			add("subscribers", changed, int64(len(set)), batch...)
		} else {
			remove("subscribers", changed, int64(len(set)), batch...)
		}
	}
	listed := collectPaged(s, ch+"/subscribers", 1000, "uid")
	if int64(len(listed)) != countOf("subscribers") || len(listed) != len(set) {
		t.Fatalf("count %d, listed %d, model %d", countOf("subscribers"), len(listed), len(set))
	}

	// An absent channel: 404 for every shape.
	for _, list := range []string{"subscribers", "denylist", "allowlist"} {
		base := "/v1/channels/1/nowhere/" + list
		s.must(404, "POST", base, uidsBody("a"))
		s.must(404, "POST", base+"/remove", uidsBody("a"))
		s.must(404, "DELETE", base+"/a", "")
		s.must(404, "GET", base, "")
		s.must(404, "GET", base+"/a", "")
	}

	// Bad input.
	c0 := s.node.Stats().Commands
	wantBad(s, "uids", "POST", ch+"/subscribers", `{"uids":[]}`)
	wantBad(s, "uids", "POST", ch+"/subscribers", `{}`)
	wantBad(s, "uids", "POST", ch+"/denylist", `{"uids":"a"}`)
	wantBad(s, "uids[1]", "POST", ch+"/allowlist", `{"uids":["a","b c"]}`)
	wantBad(s, "uids[0]", "POST", ch+"/subscribers/remove", `{"uids":[""]}`)
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprint("u", i)
	}
	wantBad(s, "uids", "POST", ch+"/subscribers", uidsBody(many...))
	wantBad(s, "uid", "GET", ch+"/subscribers/a%20b", "")
	wantBad(s, "uid", "DELETE", ch+"/denylist/"+strings.Repeat("u", 129), "")
	wantBad(s, "limit", "GET", ch+"/subscribers?limit=1001", "")
	var sub client.ChannelMemberPage
	s.must(200, "GET", ch+"/subscribers?limit=1", "").json(&sub)
	wantBad(s, "cursor", "GET", ch+"/denylist?cursor="+deref(sub.NextCursor), "") // a cursor of another list
	wantBad(s, "", "GET", ch+"/subscribers?cursor=%%", "")
	wantBad(s, "cursor", "GET", ch+"/subscribers?cursor=!!", "")
	if c1 := s.node.Stats().Commands; c1 != c0 {
		t.Fatalf("rejected requests proposed %d commands", c1-c0)
	}
	// 1000 uids is the most one call takes.
	add("allowlist", 1000, 1002, many[:1000]...)
}

// TestChannelListIdempotencyKey: a retried add with the same key answers
// the first result and does not count twice.
func TestChannelListIdempotencyKey(t *testing.T) {
	s := oneNode(t)
	s.must(201, "POST", "/v1/channels", `{"channel_id":"idem-room","channel_type":1}`)
	first := s.must(200, "POST", "/v1/channels/1/idem-room/subscribers", uidsBody("a", "b"), "Idempotency-Key", "k1")
	again := s.must(200, "POST", "/v1/channels/1/idem-room/subscribers", uidsBody("a", "b"), "Idempotency-Key", "k1")
	if string(first.body) != string(again.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %s / %s %v", first.body, again.body, again.header)
	}
	if c := s.channel("/v1/channels/1/idem-room"); c.SubscriberCount != 2 {
		t.Fatalf("count %d after a replayed add", c.SubscriberCount)
	}
}
