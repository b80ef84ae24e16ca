package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// pagingTable gives one group several runs of hash slots, so one group's
// slots are not contiguous: 0–9 g1, 10–99 g2, 100–150 g1, 151–199 g3,
// 200–255 g4.
func pagingTable(t testing.TB, rev uint64) *routing.Table {
	var groups [slotstore.HashSlotCount]slotstore.GroupID
	for s := range groups {
		switch {
		case s < 10:
			groups[s] = 1
		case s < 100:
			groups[s] = 2
		case s < 151:
			groups[s] = 1
		case s < 200:
			groups[s] = 3
		default:
			groups[s] = 4
		}
	}
	tbl, err := routing.NewTable(rev, groups)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// seedUsers stores n users plus a few that share hash slots (with each
// other and with the first and last slots), and returns every uid in
// (hash slot, uid) order.
func seedUsers(f *fakeBackend, n int) []string {
	add := func(uid string) { f.users[uid] = &meta.User{UID: uid, Name: "n-" + uid} }
	for i := range n {
		add(fmt.Sprintf("user-%03d", i))
	}
	perSlot := map[slotstore.HashSlot]int{}
	for i := 0; len(perSlot) < 3 || perSlot[0] < 2 || perSlot[255] < 2; i++ {
		uid := fmt.Sprintf("x%d", i)
		s := slotstore.HashSlotOfString(uid)
		if s == 0 || s == 255 || s == 9 || s == 10 || (s == 150 && perSlot[s] < 4) {
			add(uid)
			perSlot[s]++
		}
	}
	var all []*meta.User
	for _, u := range f.users {
		all = append(all, u)
	}
	sortUsers(all)
	uids := make([]string, len(all))
	for i, u := range all {
		uids[i] = u.UID
	}
	return uids
}

// listAll walks GET /v1/users with limit until next_cursor is empty.
func listAll(t *testing.T, f *fakeBackend, limit int, between func(page int)) []string {
	t.Helper()
	h := newHandler(t, f)
	var got []string
	cursor := ""
	for page := 0; ; page++ {
		if page > 2000 {
			t.Fatal("listing does not end")
		}
		q := url.Values{"limit": {fmt.Sprint(limit)}, "consistency": {"local"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		w := do(t, h, "GET", "/v1/users?"+q.Encode(), "")
		if w.Code != 200 {
			t.Fatalf("page %d: %d %s", page, w.Code, w.Body)
		}
		var body struct {
			Items      []userJSON `json:"items"`
			NextCursor *string    `json:"next_cursor"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Items == nil {
			t.Fatalf("page %d: %v %s", page, err, w.Body)
		}
		if len(body.Items) > limit {
			t.Fatalf("page %d holds %d items, limit %d", page, len(body.Items), limit)
		}
		for _, u := range body.Items {
			got = append(got, u.UID)
		}
		if body.NextCursor == nil {
			return got
		}
		if *body.NextCursor == "" {
			t.Fatalf("page %d: next_cursor present but empty", page)
		}
		cursor = *body.NextCursor
		if between != nil {
			between(page)
		}
	}
}

func TestListUsersWalksSlotsInOrderAcrossGroups(t *testing.T) {
	for _, limit := range []int{1, 2, 7, 1000} {
		t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
			f := newFakeTable(t, pagingTable(t, 1))
			want := seedUsers(f, 150)
			got := listAll(t, f, limit, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("listed %d users, want %d in (slot, uid) order:\n got %v\nwant %v", len(got), len(want), got, want)
			}
			for _, q := range f.scans {
				if q.Limit > limit {
					t.Fatalf("scan %+v asks for more than the page", q)
				}
			}
		})
	}
}

func TestListUsersOneQueryPerGroupRun(t *testing.T) {
	f := newFakeTable(t, pagingTable(t, 1))
	seedUsers(f, 10)
	listAll(t, f, 1000, nil)
	var ranges [][2]slotstore.HashSlot
	for _, q := range f.scans {
		ranges = append(ranges, [2]slotstore.HashSlot{q.FromSlot, q.ToSlot})
	}
	want := [][2]slotstore.HashSlot{{0, 9}, {10, 99}, {100, 150}, {151, 199}, {200, 255}}
	if !slices.Equal(ranges, want) {
		t.Fatalf("scanned %v, want %v", ranges, want)
	}
}

// A cursor names a position, so a listing continues correctly after the
// table changed under it (a new revision that regroups the hash slots).
func TestListUsersCursorSurvivesRouteChanges(t *testing.T) {
	f := newFakeTable(t, pagingTable(t, 1))
	want := seedUsers(f, 80)
	got := listAll(t, f, 3, func(page int) {
		switch page {
		case 5:
			tbl, _ := routing.InitialTable(8)
			next, _ := routing.NewTable(2, tbl.Groups())
			f.router.SetTable(next)
			for g := slotstore.GroupID(1); g <= 8; g++ {
				f.router.SetLeader(g, slotstore.NodeID(g), 9)
			}
		case 12:
			f.router.SetTable(pagingTable(t, 3))
		}
	})
	if !slices.Equal(got, want) {
		t.Fatalf("listed\n got %v\nwant %v", got, want)
	}
}

func TestListUsersEmptyAndNotReady(t *testing.T) {
	f := newFake(t, 3)
	w := do(t, newHandler(t, f), "GET", "/v1/users", "")
	if w.Code != 200 || w.Body.String() != "{\"items\":[]}\n" {
		t.Fatalf("empty listing: %d %s", w.Code, w.Body)
	}
	f = newFake(t, 3)
	f.router = routing.NewRouter() // no table yet
	w = do(t, newHandler(t, f), "GET", "/v1/users", "")
	if w.Code != 503 || decodeError(t, w).Code != slotstore.CodeRouteNotReady {
		t.Fatalf("no table: %d %s", w.Code, w.Body)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	for _, p := range []position{{}, {slot: 255}, {slot: 7, after: "u"}, {slot: 200, after: "用户-42"}} {
		got, err := decodeCursor(encodeCursor(p), uidProblem)
		if err != nil || got != p {
			t.Fatalf("%+v → %+v, %v", p, got, err)
		}
	}
}
