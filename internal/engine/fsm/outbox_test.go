package fsm_test

import (
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
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

// TestProjectionBacklogIsBounded: once a channel has MaxPendingProjection
// subscriber changes waiting for their projection, further subscriber
// changes are refused as busy (retryable, nothing written, not remembered
// under their Idempotency-Key), other lists still change, and an
// acknowledgement makes room again.
func TestProjectionBacklogIsBounded(t *testing.T) {
	db := openStore(t, t.TempDir())
	st := &stepper{t: t, s: newSM(t, db, 1, allSlots())}
	st.ok(&meta.CreateChannel{Header: hdr("bl", "", 100), Channel: chInfo(1, "bl")})
	members := func(l meta.ChannelList, idem string, uids ...string) *meta.AddChannelMembers {
		return &meta.AddChannelMembers{Header: hdr("bl", idem, 200), ChannelMembers: meta.ChannelMembers{List: l, ChannelType: 1, ChannelID: "bl", UIDs: uids}}
	}
	// Fill the outbox in entries of 256 commands.
	for i := 0; i < fsm.MaxPendingProjection; {
		var cmds []meta.Command
		for ; i < fsm.MaxPendingProjection && len(cmds) < 256; i++ {
			cmds = append(cmds, members(meta.ListSubscribers, "", fmt.Sprintf("u%d", i)))
		}
		st.ok(cmds...)
	}
	unchanged(t, db, 1, "a subscriber change past the bound", func() {
		r := st.apply(members(meta.ListSubscribers, "once", "late"))[0]
		wantCode(t, r, slotstore.CodeBusy)
		r = st.apply(&meta.RemoveChannelMembers{Header: hdr("bl", "", 200),
			ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 1, ChannelID: "bl", UIDs: []string{"u1"}}})[0]
		wantCode(t, r, slotstore.CodeBusy)
	})
	st.ok(members(meta.ListDenylist, "", "spammer")) // other lists are not bounded by the outbox
	page, _ := st.lookup(&meta.ScanOutbox{FromSlot: 0, ToSlot: slotstore.HashSlotCount - 1, Limit: 1}).(*meta.OutboxPage)
	if page == nil || len(page.Entries) != 1 {
		t.Fatalf("outbox page %+v", page)
	}
	e := page.Entries[0]
	st.ok(&meta.AckOutbox{Header: meta.Header{HashSlot: e.HashSlot}, ChannelType: 1, ChannelID: "bl", Seq: e.Seq})
	// Room again: the same Idempotency-Key is applied now, not replayed busy.
	r := st.ok(members(meta.ListSubscribers, "once", "late"))[0]
	if r.Replayed {
		t.Fatal("the busy answer was remembered under the idempotency key")
	}
}
