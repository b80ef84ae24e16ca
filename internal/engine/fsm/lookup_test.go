package fsm_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

type slotUID struct {
	slot slotstore.HashSlot
	uid  string
}

// scanAll pages through [from, to] with limit and returns every user seen.
func scanAll(t *testing.T, s *fsm.StateMachine, from, to slotstore.HashSlot, limit int) ([]slotUID, int) {
	t.Helper()
	q := &meta.ScanUsers{FromSlot: from, ToSlot: to, Limit: limit}
	var got []slotUID
	pages := 0
	for {
		v, err := s.Lookup(q)
		if err != nil {
			t.Fatalf("scan %+v: %v", q, err)
		}
		page := v.(*meta.UserPage)
		pages++
		if len(page.Users) > limit {
			t.Fatalf("page of %d users with limit %d", len(page.Users), limit)
		}
		for _, u := range page.Users {
			got = append(got, slotUID{slotstore.HashSlotOfString(u.UID), u.UID})
		}
		if !page.More {
			return got, pages
		}
		if len(page.Users) != limit {
			t.Fatalf("More with a short page (%d of %d)", len(page.Users), limit)
		}
		last := page.Users[len(page.Users)-1]
		if page.LastUID != last.UID || page.LastSlot != slotstore.HashSlotOfString(last.UID) {
			t.Fatalf("continuation (%d, %q) is not the last user (%d, %q)", page.LastSlot, page.LastUID,
				slotstore.HashSlotOfString(last.UID), last.UID)
		}
		q = &meta.ScanUsers{FromSlot: page.LastSlot, ToSlot: to, AfterUID: page.LastUID, Limit: limit}
		if pages > 10000 {
			t.Fatal("scan does not terminate")
		}
	}
}

func TestScanUsers(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	slots := slotRange(40, 46)
	s := newSM(t, db, 1, slots)

	// Users spread over the owned slots except 43 (left empty), including
	// uids that are prefixes of each other ("x" < "x\x00…" < "xa"), so that
	// continuing after a uid must not skip or repeat its extensions.
	uids := keysIn("user", 150, []slotstore.HashSlot{40, 41, 42, 44, 45})
	for _, base := range []string{"p", "q"} {
		slot := slotstore.HashSlotOfString(base)
		if slot < 40 || slot > 45 {
			base, _ = keyIn(base, 0, func(h slotstore.HashSlot) bool { return h >= 40 && h <= 45 && h != 43 })
			slot = slotstore.HashSlotOfString(base)
		}
		uids = append(uids, base)
		for _, suffix := range []string{"\x00", "\x00\x00", "a", "\xff"} {
			ext, _ := keyIn(base+suffix, 0, func(h slotstore.HashSlot) bool { return h == slot })
			uids = append(uids, ext)
		}
	}
	var cmds []meta.Command
	for _, u := range uids {
		cmds = append(cmds, createUser(u, "n-"+u, 1))
	}
	mustOK(t, apply(t, s, 1, cmds...))

	want := make([]slotUID, 0, len(uids))
	for _, u := range uids {
		want = append(want, slotUID{slotstore.HashSlotOfString(u), u})
	}
	sort.Slice(want, func(i, j int) bool {
		if want[i].slot != want[j].slot {
			return want[i].slot < want[j].slot
		}
		return want[i].uid < want[j].uid
	})
	perSlot := map[slotstore.HashSlot]int{}
	for _, w := range want {
		perSlot[w.slot]++
	}

	for _, limit := range []int{1, 2, 7, perSlot[40], perSlot[40] + perSlot[41], len(want) - 1, len(want), 1000} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			got, pages := scanAll(t, s, 40, 45, limit)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %d users %v\nwant %d %v", len(got), got, len(want), want)
			}
			if wantPages := (len(want) + limit - 1) / limit; pages < wantPages || pages > wantPages+1 {
				t.Fatalf("%d pages for %d users at %d per page", pages, len(want), limit)
			}
		})
	}

	// A sub-range returns only its slots.
	got, _ := scanAll(t, s, 41, 42, 5)
	if len(got) != perSlot[41]+perSlot[42] {
		t.Fatalf("sub-range: %d users, want %d", len(got), perSlot[41]+perSlot[42])
	}
	for _, g := range got {
		if g.slot < 41 || g.slot > 42 {
			t.Fatalf("sub-range returned slot %d", g.slot)
		}
	}
	// The empty slot alone: an empty last page.
	if got, _ := scanAll(t, s, 43, 43, 3); len(got) != 0 {
		t.Fatalf("empty slot: %v", got)
	}
	// Deleted users disappear from scans.
	mustOK(t, apply(t, s, 2, delUser(want[0].uid), delUser(want[len(want)-1].uid)))
	if got, _ := scanAll(t, s, 40, 45, 9); len(got) != len(want)-2 || got[0] == want[0] {
		t.Fatalf("after deletes: %d users", len(got))
	}

	// Bad ranges.
	for _, q := range []*meta.ScanUsers{{FromSlot: 45, ToSlot: 40}, {FromSlot: 40, ToSlot: 256}} {
		if _, err := s.Lookup(q); !isCode(err, slotstore.CodeInvalidArgument) {
			t.Fatalf("scan %+v: %v, want invalid_argument", q, err)
		}
	}
	if _, err := s.Lookup(&meta.ScanUsers{FromSlot: 39, ToSlot: 41}); !isCode(err, slotstore.CodeWrongGroup) {
		t.Fatal("a scan reaching an unowned slot was answered")
	}
}
