package fsm_test

import (
	"testing"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
	"slotmeta/internal/slotstore/store"
)

// TestProjectionIsFencedByVersion: a projection applies once; repeating it
// (a crash before its acknowledgement) or delivering an older one after a
// newer one changes nothing.
func TestProjectionIsFencedByVersion(t *testing.T) {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	uid := "projected-user"
	hs := slotstore.HashSlotOfString(uid)
	s := openGroup(t, db, 1, []slotstore.HashSlot{hs})
	var idx uint64
	uc := meta.UserChannel{UID: uid, ChannelType: 1, ChannelID: "ch"}
	project := func(version uint64, add bool) meta.Result {
		return apply1(t, s, &idx, &meta.ProjectMembership{Header: meta.Header{HashSlot: hs, TimeMs: 1000}, UserChannel: uc, Version: version, Add: add})
	}
	get := func() *meta.Membership {
		v, err := s.Lookup(&meta.GetMembership{HashSlot: hs, UserChannel: uc})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := v.(*meta.Membership)
		return m
	}
	if r := project(2, true); !r.OK() {
		t.Fatal(r)
	}
	first := get()
	if first == nil || first.Tombstone || first.ProjectedVersion != 2 {
		t.Fatalf("after the join: %+v", first)
	}
	if r := project(2, true); !r.OK() || get().Revision != first.Revision {
		t.Fatalf("a repeated projection wrote again: %+v", get())
	}
	if r := project(3, false); !r.OK() || !get().Tombstone {
		t.Fatalf("the leave was not projected: %+v", get())
	}
	if r := project(2, true); !r.OK() || !get().Tombstone || get().ProjectedVersion != 3 {
		t.Fatalf("an older join undid a newer leave: %+v", get())
	}
	if r := project(4, true); !r.OK() || get().Tombstone {
		t.Fatalf("a newer join did not revive the membership: %+v", get())
	}
}
