package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// collectPaged walks a listing page by page with limit and returns each
// item's field (a string, or a number rendered in decimal), in the order
// listed. It fails on a page over the limit, a listing that does not end,
// or a cursor that is present but empty.
func collectPaged(s *server, path string, limit int, field string) []string {
	s.t.Helper()
	var out []string
	cursor := ""
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	for pages := 0; ; pages++ {
		if pages > 2000 {
			s.t.Fatalf("%s: paging does not end", path)
		}
		r := s.must(200, "GET", fmt.Sprintf("%s%slimit=%d&cursor=%s", path, sep, limit, url.QueryEscape(cursor)), "")
		var page struct {
			Items      []map[string]json.RawMessage `json:"items"`
			NextCursor *string                      `json:"next_cursor"`
		}
		r.json(&page)
		if page.Items == nil {
			s.t.Fatalf("%s: page without items: %s", path, r.body)
		}
		if len(page.Items) > limit {
			s.t.Fatalf("%s: page of %d items over limit %d", path, len(page.Items), limit)
		}
		for _, it := range page.Items {
			var v any
			if err := json.Unmarshal(it[field], &v); err != nil {
				s.t.Fatalf("%s: item %s lacks %s", path, it, field)
			}
			out = append(out, fmt.Sprint(v))
		}
		if page.NextCursor == nil {
			return out
		}
		if *page.NextCursor == "" {
			s.t.Fatalf("%s: next_cursor present but empty", path)
		}
		cursor = *page.NextCursor
	}
}

// samePaged walks path with limits 1, 2 and 1000 and fails unless each walk
// lists exactly want, in order (every item exactly once).
func samePaged(s *server, path, field string, want []string) {
	s.t.Helper()
	for _, limit := range []int{1, 2, 1000} {
		if got := collectPaged(s, path, limit, field); !slices.Equal(got, want) {
			s.t.Fatalf("%s limit %d listed\n %v\nwant\n %v", path, limit, got, want)
		}
	}
}

// wantBad fails unless the request answers 400 invalid_argument naming field
// in details (field "" skips that check).
func wantBad(s *server, field, method, path, body string, headers ...string) {
	s.t.Helper()
	r := s.do(method, path, body, headers...)
	var e client.ErrorBody
	_ = json.Unmarshal(r.body, &e)
	if r.code != 400 || e.Error.Code != "invalid_argument" {
		s.t.Fatalf("%s %s %.80s: %d %s, want 400 invalid_argument", method, path, body, r.code, r.body)
	}
	if field == "" {
		return
	}
	for _, d := range deref(e.Error.Details) {
		if d.Field == field {
			return
		}
	}
	s.t.Fatalf("%s %s %.80s: details %s do not name %q", method, path, body, r.body, field)
}

func wantRouteHeaders(t *testing.T, r response, key string) {
	t.Helper()
	for _, h := range []string{"X-Hash-Slot", "X-Slot-Group", "X-Leader-Node", "X-Leader-Term", "X-Config-Epoch", "X-Route-Revision"} {
		if r.header.Get(h) == "" {
			t.Fatalf("keyed response lacks %s: %v", h, r.header)
		}
	}
	if got, want := r.header.Get("X-Hash-Slot"), fmt.Sprint(uint16(hashSlot(key))); got != want {
		t.Fatalf("X-Hash-Slot %s, want %s (the slot of %q)", got, want, key)
	}
}

func TestDevicesCRUDAndList(t *testing.T) {
	s := oneNode(t)
	if r := s.do("PUT", "/v1/users/dev-u/devices/1", `{"token":"t"}`); r.code != 404 || r.errCode() != "not_found" {
		t.Fatalf("device of an absent user: %d %s", r.code, r.body)
	}
	s.must(404, "GET", "/v1/users/dev-u/devices", "")
	s.must(201, "POST", "/v1/users", `{"uid":"dev-u"}`)

	r := s.must(200, "PUT", "/v1/users/dev-u/devices/1", `{"token":"tok-1","device_level":1}`)
	wantRouteHeaders(t, r, "dev-u")
	var d1 client.Device
	r.json(&d1)
	if d1.Uid != "dev-u" || d1.DeviceFlag != 1 || d1.Token != "tok-1" || d1.DeviceLevel != 1 || d1.CreatedAtMs == 0 || d1.Revision == 0 {
		t.Fatalf("put device: %+v", d1)
	}
	var d2 client.Device
	s.must(200, "PUT", "/v1/users/dev-u/devices/1", `{"token":"tok-2"}`).json(&d2)
	if d2.Token != "tok-2" || d2.DeviceLevel != 0 || d2.CreatedAtMs != d1.CreatedAtMs || d2.Revision <= d1.Revision {
		t.Fatalf("upsert kept creation time and bumped revision? %+v after %+v", d2, d1)
	}
	var got client.Device
	r = s.must(200, "GET", "/v1/users/dev-u/devices/1", "")
	wantRouteHeaders(t, r, "dev-u")
	r.json(&got)
	if got != d2 || r.header.Get("X-Served-By") == "" || r.header.Get("X-Applied-Index") == "" {
		t.Fatalf("get device: %+v %v", got, r.header)
	}
	s.must(404, "GET", "/v1/users/dev-u/devices/2", "")

	for _, f := range []int{255, 0, 3, 2, 17} {
		s.must(200, "PUT", fmt.Sprintf("/v1/users/dev-u/devices/%d", f), fmt.Sprintf(`{"token":"t%d","device_level":255}`, f))
	}
	samePaged(s, "/v1/users/dev-u/devices", "device_flag", []string{"0", "1", "2", "3", "17", "255"})

	s.must(204, "DELETE", "/v1/users/dev-u/devices/2", "")
	s.must(404, "DELETE", "/v1/users/dev-u/devices/2", "")
	s.must(404, "GET", "/v1/users/dev-u/devices/2", "")
	samePaged(s, "/v1/users/dev-u/devices", "device_flag", []string{"0", "1", "3", "17", "255"})

	// Bad input: 400 naming the field, never proposed.
	c0 := s.node.Stats().Commands
	for _, flag := range []string{"256", "-1", "01", "x", "1.5", "%2B1"} {
		wantBad(s, "device_flag", "PUT", "/v1/users/dev-u/devices/"+flag, `{"token":"t"}`)
		wantBad(s, "device_flag", "GET", "/v1/users/dev-u/devices/"+flag, "")
	}
	wantBad(s, "token", "PUT", "/v1/users/dev-u/devices/1", `{"device_level":1}`)
	wantBad(s, "token", "PUT", "/v1/users/dev-u/devices/1", `{"token":"`+strings.Repeat("t", 1025)+`"}`)
	wantBad(s, "device_level", "PUT", "/v1/users/dev-u/devices/1", `{"token":"t","device_level":256}`)
	wantBad(s, "device_level", "PUT", "/v1/users/dev-u/devices/1", `{"token":"t","device_level":-1}`)
	wantBad(s, "device_level", "PUT", "/v1/users/dev-u/devices/1", `{"token":"t","device_level":"1"}`)
	wantBad(s, "bogus", "PUT", "/v1/users/dev-u/devices/1", `{"token":"t","bogus":1}`)
	wantBad(s, "uid", "PUT", "/v1/users/a%20b/devices/1", `{"token":"t"}`)
	wantBad(s, "limit", "GET", "/v1/users/dev-u/devices?limit=1001", "")
	wantBad(s, "cursor", "GET", "/v1/users/dev-u/devices?cursor=bogus", "")
	// A cursor of another listing is refused.
	s.must(200, "PUT", "/v1/system-uids/sys-a", "")
	s.must(200, "PUT", "/v1/system-uids/sys-b", "")
	var sys client.SystemUIDPage
	s.must(200, "GET", "/v1/system-uids?limit=1", "").json(&sys)
	c1 := s.node.Stats().Commands
	wantBad(s, "cursor", "GET", "/v1/users/dev-u/devices?cursor="+deref(sys.NextCursor), "")
	if c2 := s.node.Stats().Commands; c2 != c1 || c1-c0 != 2 {
		t.Fatalf("rejected requests proposed commands: %d, %d", c1-c0, c2-c1)
	}
}

func TestPluginBindingsAndScanAcrossSlots(t *testing.T) {
	s := oneNode(t)
	s.must(404, "PUT", "/v1/users/plg-u/plugins/p1", "")
	s.must(201, "POST", "/v1/users", `{"uid":"plg-u"}`)

	// The body is optional.
	var b1, b2 client.PluginBinding
	r := s.must(200, "PUT", "/v1/users/plg-u/plugins/p1", "")
	wantRouteHeaders(t, r, "plg-u")
	r.json(&b1)
	if b1.Uid != "plg-u" || b1.PluginNo != "p1" || r.member("config") != "null" || b1.Revision == 0 {
		t.Fatalf("bind: %s", r.body)
	}
	r2 := s.must(200, "PUT", "/v1/users/plg-u/plugins/p1", `{"config":{"webhook":"https://x/y","n":[1,2]}}`)
	r2.json(&b2)
	if r2.member("config") != `{"webhook":"https://x/y","n":[1,2]}` || b2.CreatedAtMs != b1.CreatedAtMs || b2.Revision <= b1.Revision {
		t.Fatalf("rebind: %s after %s", r2.body, r.body)
	}
	for _, p := range []string{"z.9", "A-b_c", "p2"} {
		s.must(200, "PUT", "/v1/users/plg-u/plugins/"+p, `{"config":null}`)
	}
	samePaged(s, "/v1/users/plg-u/plugins", "plugin_no", []string{"A-b_c", "p1", "p2", "z.9"})
	s.must(204, "DELETE", "/v1/users/plg-u/plugins/p2", "")
	s.must(404, "DELETE", "/v1/users/plg-u/plugins/p2", "")
	samePaged(s, "/v1/users/plg-u/plugins", "plugin_no", []string{"A-b_c", "p1", "z.9"})

	// Many users over many hash slots bound to "scan": listed across all
	// groups in (hash slot, uid) order; users of other plugins are not.
	var bound []string
	for i := 0; i < 40; i++ {
		uid := fmt.Sprintf("pu-%02d", i)
		s.must(201, "POST", "/v1/users", fmt.Sprintf(`{"uid":%q}`, uid))
		s.must(200, "PUT", "/v1/users/"+uid+"/plugins/other", "")
		if i%3 != 0 {
			s.must(200, "PUT", "/v1/users/"+uid+"/plugins/scan", fmt.Sprintf(`{"config":{"i":%d}}`, i))
			bound = append(bound, uid)
		}
	}
	sortBySlot(bound)
	samePaged(s, "/v1/plugins/scan/users", "uid", bound)
	r = s.must(200, "GET", "/v1/plugins/scan/users?limit=1000&consistency=local", "")
	var page client.PluginBindingPage
	r.json(&page)
	if r.header.Get("X-Route-Revision") == "" || len(page.Items) != len(bound) || page.Items[0].PluginNo != "scan" || page.Items[0].Config == nil {
		t.Fatalf("plugin users page: %v %s", r.header, r.body)
	}
	// Unbinding removes the index row.
	s.must(204, "DELETE", "/v1/users/"+bound[3]+"/plugins/scan", "")
	samePaged(s, "/v1/plugins/scan/users", "uid", slices.Delete(slices.Clone(bound), 3, 4))
	if got := collectPaged(s, "/v1/plugins/nobody/users", 5, "uid"); len(got) != 0 {
		t.Fatalf("unknown plugin lists %v", got)
	}

	wantBad(s, "plugin_no", "PUT", "/v1/users/plg-u/plugins/"+strings.Repeat("p", 65), "")
	wantBad(s, "plugin_no", "PUT", "/v1/users/plg-u/plugins/a%20b", "")
	wantBad(s, "plugin_no", "PUT", "/v1/users/plg-u/plugins/a:b", "")
	wantBad(s, "plugin_no", "GET", "/v1/plugins/%C3%A9/users", "")
	wantBad(s, "config", "PUT", "/v1/users/plg-u/plugins/p1", `{"config":"`+strings.Repeat("c", 16<<10)+`"}`)
	wantBad(s, "", "PUT", "/v1/users/plg-u/plugins/p1", `{"config":`)
	wantBad(s, "cfg", "PUT", "/v1/users/plg-u/plugins/p1", `{"cfg":1}`)
	wantBad(s, "cursor", "GET", "/v1/plugins/scan/users?cursor=AAAA", "")
	wantBad(s, "limit", "GET", "/v1/plugins/scan/users?limit=0", "")
}

// sortBySlot sorts uids in (hash slot, uid) order.
func sortBySlot(uids []string) {
	sort.Slice(uids, func(i, j int) bool {
		si, sj := hashSlot(uids[i]), hashSlot(uids[j])
		if si != sj {
			return si < sj
		}
		return uids[i] < uids[j]
	})
}

func TestDeletingAUserDeletesItsDevicesAndPlugins(t *testing.T) {
	s := oneNode(t)
	for _, uid := range []string{"gone", "stays"} {
		s.must(201, "POST", "/v1/users", fmt.Sprintf(`{"uid":%q}`, uid))
		for _, f := range []int{0, 1, 255} {
			s.must(200, "PUT", fmt.Sprintf("/v1/users/%s/devices/%d", uid, f), `{"token":"t"}`)
		}
		for _, p := range []string{"p1", "p2"} {
			s.must(200, "PUT", "/v1/users/"+uid+"/plugins/"+p, `{"config":{"k":1}}`)
		}
	}
	s.must(204, "DELETE", "/v1/users/gone", "")
	s.must(404, "GET", "/v1/users/gone/devices", "")
	s.must(404, "GET", "/v1/users/gone/devices/1", "")
	s.must(404, "GET", "/v1/users/gone/plugins", "")
	samePaged(s, "/v1/plugins/p1/users", "uid", []string{"stays"})
	// A user created again under the same uid starts empty.
	s.must(201, "POST", "/v1/users", `{"uid":"gone"}`)
	samePaged(s, "/v1/users/gone/devices", "device_flag", nil)
	samePaged(s, "/v1/users/gone/plugins", "plugin_no", nil)
	samePaged(s, "/v1/users/stays/devices", "device_flag", []string{"0", "1", "255"})
	samePaged(s, "/v1/users/stays/plugins", "plugin_no", []string{"p1", "p2"})
	samePaged(s, "/v1/plugins/p2/users", "uid", []string{"stays"})
}

func TestSystemUIDs(t *testing.T) {
	s := oneNode(t)
	var a1, a2 client.SystemUID
	r := s.must(200, "PUT", "/v1/system-uids/bot-1", "")
	wantRouteHeaders(t, r, meta.SystemUIDsRouteKey)
	r.json(&a1)
	if a1.Uid != "bot-1" || a1.CreatedAtMs == 0 || a1.Revision == 0 {
		t.Fatalf("add: %+v", a1)
	}
	s.must(200, "PUT", "/v1/system-uids/bot-1", "").json(&a2)
	if a2 != a1 {
		t.Fatalf("adding again changed the member: %+v, then %+v", a1, a2)
	}
	want := []string{"bot-1"}
	for i := 0; i < 14; i++ {
		uid := fmt.Sprintf("sys-%02d", 13-i)
		s.must(200, "PUT", "/v1/system-uids/"+uid, "")
		want = append(want, uid)
	}
	slices.Sort(want)
	samePaged(s, "/v1/system-uids", "uid", want)
	s.must(204, "DELETE", "/v1/system-uids/bot-1", "")
	s.must(404, "DELETE", "/v1/system-uids/bot-1", "")
	samePaged(s, "/v1/system-uids", "uid", want[1:])
	wantBad(s, "uid", "PUT", "/v1/system-uids/a%2Fb", "")
	wantBad(s, "uid", "DELETE", "/v1/system-uids/"+strings.Repeat("u", 129), "")
	wantBad(s, "limit", "GET", "/v1/system-uids?limit=abc", "")
	wantBad(s, "consistency", "GET", "/v1/system-uids?consistency=weak", "")
	if r := s.must(200, "GET", "/v1/system-uids?consistency=local", ""); r.header.Get("X-Hash-Slot") != fmt.Sprint(uint16(slotstore.HashSlotOfString(meta.SystemUIDsRouteKey))) {
		t.Fatalf("list route headers: %v", r.header)
	}
}
