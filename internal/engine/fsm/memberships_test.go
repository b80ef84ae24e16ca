package fsm_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func uch(uid string, t uint8, id string) meta.UserChannel {
	return meta.UserChannel{UID: uid, ChannelType: t, ChannelID: id}
}

func putMember(uc meta.UserChannel, timeMs int64, join, read, deleted uint64) *meta.PutMembership {
	return &meta.PutMembership{Header: hdr(uc.UID, "", timeMs), UserChannel: uc, JoinSeq: join, ReadSeq: read, DeletedToSeq: deleted}
}

func decodeMembership(tb testing.TB, r meta.Result) *meta.Membership {
	tb.Helper()
	m, err := meta.DecodeMembership(r.Value)
	if err != nil {
		tb.Fatalf("result value: %v", err)
	}
	return m
}

func getMembership(tb testing.TB, s *fsm.StateMachine, uc meta.UserChannel) *meta.Membership {
	tb.Helper()
	v, err := s.Lookup(&meta.GetMembership{HashSlot: slotstore.HashSlotOfString(uc.UID), UserChannel: uc})
	if err != nil {
		tb.Fatalf("get membership %+v: %v", uc, err)
	}
	return v.(*meta.Membership)
}

// listAllMemberships pages through uid's memberships with limit and
// returns the channel ids in order.
func listAllMemberships(tb testing.TB, s *fsm.StateMachine, uid string, limit int) []string {
	tb.Helper()
	q := &meta.ListMemberships{HashSlot: slotstore.HashSlotOfString(uid), UID: uid, Limit: limit}
	var out []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			tb.Fatal("listing does not end")
		}
		v, err := s.Lookup(q)
		if err != nil {
			tb.Fatal(err)
		}
		p := v.(*meta.MembershipPage)
		if len(p.Items) > limit {
			tb.Fatalf("page of %d with limit %d", len(p.Items), limit)
		}
		for _, m := range p.Items {
			out = append(out, m.ChannelID)
		}
		if !p.More {
			return out
		}
		last := p.Items[len(p.Items)-1]
		q.After = &meta.ActivityPos{AtMs: last.ActivatedAtMs, ChannelType: last.ChannelType, ChannelID: last.ChannelID}
	}
}

// checkActivityIndex holds the activity index to the membership rows of
// group g: exactly one entry per membership that is not a tombstone, under
// its activation time, holding the row itself; nothing else.
func checkActivityIndex(tb testing.TB, db *store.DB, g slotstore.GroupID) {
	tb.Helper()
	want := map[string][]byte{}
	got := map[string][]byte{}
	for _, r := range span(tb, db, g) {
		_, hs, table, _, ok := meta.SplitRowKey(r.k)
		if !ok {
			continue
		}
		switch table {
		case meta.TableMembership:
			m, err := meta.DecodeMembership(r.v)
			if err != nil {
				tb.Fatal(err)
			}
			if !m.Tombstone {
				want[string(meta.MembershipActivityKey(g, hs, m.UID, m.ActivatedAtMs, m.ChannelType, m.ChannelID))] = r.v
			}
		case meta.TableMembershipActivity:
			got[string(r.k)] = r.v
		}
	}
	if len(got) != len(want) {
		tb.Fatalf("activity index has %d entries, %d memberships are not tombstones", len(got), len(want))
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			tb.Fatalf("activity index entry %x is %x, want the row %x", k, got[k], v)
		}
	}
}

func TestMembershipCommands(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	g1 := uch("alice", 2, "group-1")

	r := mustOK(t, apply(t, s, 1, putMember(g1, 1000, 10, 20, 5)))[0]
	m := decodeMembership(t, r)
	want := meta.Membership{UID: "alice", ChannelType: 2, ChannelID: "group-1", JoinSeq: 10, ReadSeq: 20, DeletedToSeq: 5,
		ActivatedAtMs: 1000, CreatedAtMs: 1000, UpdatedAtMs: 1000, Revision: r.Revision}
	if *m != want || *getMembership(t, s, g1) != want {
		t.Fatalf("created %+v, want %+v", m, want)
	}
	checkActivityIndex(t, db, 1)

	// An upsert: join_seq set, read/deleted floors kept, activation kept.
	m = decodeMembership(t, mustOK(t, apply(t, s, 2, putMember(g1, 2000, 11, 3, 9)))[0])
	if m.JoinSeq != 11 || m.ReadSeq != 20 || m.DeletedToSeq != 9 || m.ActivatedAtMs != 1000 || m.CreatedAtMs != 1000 || m.UpdatedAtMs != 2000 {
		t.Fatalf("upsert %+v", m)
	}
	// With activated_at_ms it moves in the index.
	c := putMember(g1, 2500, 11, 0, 0)
	c.HasActivatedAt, c.ActivatedAtMs = true, 1500
	if m = decodeMembership(t, mustOK(t, apply(t, s, 3, c))[0]); m.ActivatedAtMs != 1500 {
		t.Fatalf("activated_at_ms %d", m.ActivatedAtMs)
	}
	checkActivityIndex(t, db, 1)
	if n := countTable(t, db, 1, meta.TableMembershipActivity); n != 1 {
		t.Fatalf("%d index entries after moving, want 1", n)
	}

	// read: a lower or equal read_seq writes nothing and answers the row.
	before := getMembership(t, s, g1)
	unchanged(t, db, 1, "a lower read_seq", func() {
		r := mustOK(t, apply(t, s, 4, &meta.ReadMembership{Header: hdr("alice", "", 3000), UserChannel: g1, ReadSeq: 7}))[0]
		if r.Revision != before.Revision || decodeMembership(t, r).ReadSeq != 20 {
			t.Fatalf("lower read answered %+v", decodeMembership(t, r))
		}
		mustOK(t, apply(t, s, 5, &meta.ReadMembership{Header: hdr("alice", "", 3000), UserChannel: g1, ReadSeq: 20}))
	})
	m = decodeMembership(t, mustOK(t, apply(t, s, 6, &meta.ReadMembership{Header: hdr("alice", "", 3000), UserChannel: g1, ReadSeq: 25}))[0])
	if m.ReadSeq != 25 || m.Revision <= before.Revision || m.UpdatedAtMs != 3000 {
		t.Fatalf("read forward %+v", m)
	}
	// hide: the same rule on deleted_to_seq.
	unchanged(t, db, 1, "a lower to_seq", func() {
		mustOK(t, apply(t, s, 7, &meta.HideMembership{Header: hdr("alice", "", 3100), UserChannel: g1, ToSeq: 9}))
	})
	if m = decodeMembership(t, mustOK(t, apply(t, s, 8, &meta.HideMembership{Header: hdr("alice", "", 3100), UserChannel: g1, ToSeq: 40}))[0]); m.DeletedToSeq != 40 {
		t.Fatalf("hide %+v", m)
	}
	// activate: the command's time.
	if m = decodeMembership(t, mustOK(t, apply(t, s, 9, &meta.ActivateMembership{Header: hdr("alice", "", 4000), UserChannel: g1}))[0]); m.ActivatedAtMs != 4000 {
		t.Fatalf("activate %+v", m)
	}
	checkActivityIndex(t, db, 1)

	// A tombstone leaves the index but stays readable.
	c = putMember(g1, 5000, 11, 0, 0)
	c.Tombstone = true
	mustOK(t, apply(t, s, 10, c))
	if m := getMembership(t, s, g1); !m.Tombstone || m.ReadSeq != 25 {
		t.Fatalf("tombstone %+v", m)
	}
	checkActivityIndex(t, db, 1)
	if got := listAllMemberships(t, s, "alice", 10); len(got) != 0 {
		t.Fatalf("a tombstone is listed: %v", got)
	}
	// Read on a tombstone still works (the row is there); activating keeps it out of the list.
	mustOK(t, apply(t, s, 11, &meta.ActivateMembership{Header: hdr("alice", "", 6000), UserChannel: g1}))
	checkActivityIndex(t, db, 1)
	// Rejoining brings it back.
	mustOK(t, apply(t, s, 12, putMember(g1, 7000, 50, 0, 0)))
	if got := listAllMemberships(t, s, "alice", 10); len(got) != 1 {
		t.Fatalf("rejoined membership not listed: %v", got)
	}
	checkActivityIndex(t, db, 1)

	// Delete: row and index entry go; a second delete and commands on it are not_found.
	mustOK(t, apply(t, s, 13, &meta.DeleteMembership{Header: hdr("alice", "", 8000), UserChannel: g1}))
	if getMembership(t, s, g1) != nil || countTable(t, db, 1, meta.TableMembershipActivity) != 0 {
		t.Fatal("delete left rows")
	}
	unchanged(t, db, 1, "commands on a missing membership", func() {
		for i, c := range []meta.Command{
			&meta.DeleteMembership{Header: hdr("alice", "", 1), UserChannel: g1},
			&meta.ReadMembership{Header: hdr("alice", "", 1), UserChannel: g1, ReadSeq: 1},
			&meta.HideMembership{Header: hdr("alice", "", 1), UserChannel: g1, ToSeq: 1},
			&meta.ActivateMembership{Header: hdr("alice", "", 1), UserChannel: g1},
		} {
			wantCode(t, apply(t, s, uint64(14+i), c)[0], slotstore.CodeNotFound)
		}
	})
	// Malformed identities are refused and write nothing.
	unchanged(t, db, 1, "bad identities", func() {
		for i, uc := range []meta.UserChannel{uch("alice", 0, "g"), uch("alice", 1, ""), uch("alice", 1, "a b"), uch("", 1, "g")} {
			wantCode(t, apply(t, s, uint64(20+i), putMember(uc, 1, 0, 0, 0))[0], slotstore.CodeInvalidArgument)
		}
		bad := putMember(g1, 1, 0, 0, 0)
		bad.HasActivatedAt, bad.ActivatedAtMs = true, -5
		wantCode(t, apply(t, s, 30, bad)[0], slotstore.CodeInvalidArgument)
	})
}

func TestMembershipListNewestActivityFirst(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	idx := uint64(0)
	put := func(uid string, typ uint8, id string, at int64) {
		idx++
		c := putMember(uch(uid, typ, id), 1, 0, 0, 0)
		c.HasActivatedAt, c.ActivatedAtMs = true, at
		mustOK(t, apply(t, s, idx, c))
	}
	// Activation times out of insertion order, a tie (broken by channel
	// order), and a second user whose rows must not show up.
	put("bob", 1, "c-old", 100)
	put("bob", 2, "c-new", 900)
	put("bob", 1, "c-mid", 500)
	put("bob", 1, "c-tie-b", 700)
	put("bob", 1, "c-tie-a", 700)
	put("bob", 3, "c-tie-c", 700)
	put("bob\x00x", 1, "other-user", 1000)
	put("bo", 1, "prefix-user", 1000)
	want := []string{"c-new", "c-tie-a", "c-tie-b", "c-tie-c", "c-mid", "c-old"}
	for _, limit := range []int{1, 2, 4, 100} {
		if got := listAllMemberships(t, s, "bob", limit); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
	// Activation moves a membership to the front.
	idx++
	mustOK(t, apply(t, s, idx, &meta.ActivateMembership{Header: hdr("bob", "", 5000), UserChannel: uch("bob", 1, "c-old")}))
	if got := listAllMemberships(t, s, "bob", 3); got[0] != "c-old" || len(got) != 6 {
		t.Fatalf("after activation: %v", got)
	}
	checkActivityIndex(t, db, 1)

	// Lookups check the route and ownership.
	if _, err := s.Lookup(&meta.ListMemberships{HashSlot: slotstore.HashSlotOfString("bob") + 1, UID: "bob"}); !isCode(err, slotstore.CodeInvalidArgument) {
		t.Fatalf("list on the wrong slot: %v", err)
	}
	s2 := newSM(t, db, 2, nil)
	if _, err := s2.Lookup(&meta.GetMembership{HashSlot: slotstore.HashSlotOfString("bob"), UserChannel: uch("bob", 1, "c-old")}); !isCode(err, slotstore.CodeWrongGroup) {
		t.Fatalf("get on a group that does not own the slot: %v", err)
	}
}

func TestCmdBindingCommands(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	s := newSM(t, db, 1, allSlots())
	uc := uch("carol", 1, "cmd-1")
	put := func(idx uint64, uc meta.UserChannel, start uint64, at int64) meta.Result {
		return apply(t, s, idx, &meta.PutCmdBinding{Header: hdr(uc.UID, "", at), UserChannel: uc, StartSeq: start})[0]
	}
	ack := func(idx uint64, seq uint64) meta.Result {
		return apply(t, s, idx, &meta.AckCmdBinding{Header: hdr("carol", "", 50), UserChannel: uc, AckSeq: seq})[0]
	}
	decode := func(r meta.Result) *meta.CmdBinding {
		t.Helper()
		if !r.OK() {
			t.Fatalf("%s: %s", r.Code, r.Message)
		}
		b, err := meta.DecodeCmdBinding(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	wantCode(t, ack(1, 5), slotstore.CodeNotFound)
	b := decode(put(2, uc, 10, 100))
	if b.StartSeq != 10 || b.AckSeq != 0 || b.CreatedAtMs != 100 {
		t.Fatalf("created %+v", b)
	}
	if b = decode(ack(3, 15)); b.AckSeq != 15 || b.UpdatedAtMs != 50 {
		t.Fatalf("ack %+v", b)
	}
	unchanged(t, db, 1, "a lower ack", func() {
		if got := decode(ack(4, 12)); got.AckSeq != 15 || got.Revision != b.Revision {
			t.Fatalf("lower ack answered %+v", got)
		}
	})
	// Put keeps the ack and the creation time.
	if b = decode(put(5, uc, 3, 200)); b.StartSeq != 3 || b.AckSeq != 15 || b.CreatedAtMs != 100 || b.UpdatedAtMs != 200 {
		t.Fatalf("re-put %+v", b)
	}
	// Independent of memberships: no membership was written.
	if countTable(t, db, 1, meta.TableMembership) != 0 {
		t.Fatal("a CMD binding wrote a membership")
	}
	for i := range 5 {
		mustOK(t, []meta.Result{put(uint64(10+i), uch("carol", uint8(2+i%2), fmt.Sprintf("c-%d", i)), 1, 1)})
	}
	list := func(limit int) []string {
		q := &meta.ListCmdBindings{HashSlot: slotstore.HashSlotOfString("carol"), UID: "carol", Limit: limit}
		var out []string
		for {
			v, err := s.Lookup(q)
			if err != nil {
				t.Fatal(err)
			}
			p := v.(*meta.CmdBindingPage)
			for _, b := range p.Items {
				out = append(out, fmt.Sprintf("%d/%s", b.ChannelType, b.ChannelID))
			}
			if !p.More {
				return out
			}
			last := p.Items[len(p.Items)-1]
			q.HasAfter, q.AfterType, q.AfterID = true, last.ChannelType, last.ChannelID
		}
	}
	want := "[1/cmd-1 2/c-0 2/c-2 2/c-4 3/c-1 3/c-3]"
	for _, limit := range []int{1, 2, 1000} {
		if got := fmt.Sprint(list(limit)); got != want {
			t.Fatalf("limit %d: %s, want %s", limit, got, want)
		}
	}
	mustOK(t, apply(t, s, 30, &meta.DeleteCmdBinding{Header: hdr("carol", "", 1), UserChannel: uc}))
	wantCode(t, apply(t, s, 31, &meta.DeleteCmdBinding{Header: hdr("carol", "", 1), UserChannel: uc})[0], slotstore.CodeNotFound)
	if v, err := s.Lookup(&meta.GetCmdBinding{HashSlot: slotstore.HashSlotOfString("carol"), UserChannel: uc}); err != nil || v.(*meta.CmdBinding) != nil {
		t.Fatalf("deleted binding reads %v, %v", v, err)
	}
}

// TestChannelRowCommandsAreDeterministic applies one workload of every new
// command to two replicas, one command per entry on one and all in one
// entry on the other, and compares their whole state.
func TestChannelRowCommandsAreDeterministic(t *testing.T) {
	t.Parallel()
	var cmds []meta.Command
	for i := range 40 {
		uid, ch := fmt.Sprintf("u-%d", i%5), fmt.Sprintf("ch-%d", i%7)
		uc := uch(uid, uint8(1+i%3), ch)
		ref := meta.ChanRef{ChannelType: uint8(1 + i%3), ChannelID: ch}
		at := int64(1000 + i)
		cmds = append(cmds,
			putMember(uc, at, uint64(i), uint64(i*2), 0),
			&meta.ReadMembership{Header: hdr(uid, "", at), UserChannel: uc, ReadSeq: uint64(i * 3)},
			&meta.ActivateMembership{Header: hdr(uid, "", at+7), UserChannel: uc},
			&meta.PutCmdBinding{Header: hdr(uid, "", at), UserChannel: uc, StartSeq: uint64(i)},
			&meta.AppendEvent{Header: hdr(ch, "", at), Event: meta.ChannelEvent{ChannelType: ref.ChannelType, ChannelID: ch,
				ClientMsgNo: "n", EventKey: "k", EventID: fmt.Sprint(i), EventType: "t"}},
			&meta.CreateChannelTask{Header: hdr(ch, "", at), ChanRef: ref, Kind: meta.ChannelReplicaMove, SourceNode: 1, TargetNode: 2},
			&meta.AbortChannelTask{Header: hdr(ch, "", at), ChanRef: ref, TaskID: 1},
			&meta.PutRuntime{Header: hdr(ch, "", at), Runtime: meta.ChannelRuntime{ChannelType: ref.ChannelType, ChannelID: ch,
				ChannelEpoch: uint64(i % 4), Leader: 1, Replicas: []uint64{1}, ISR: []uint64{1}, MinISR: 1, Status: meta.RuntimeActive,
				LeaseUntilMs: at}},
		)
		if i%9 == 0 {
			cmds = append(cmds, &meta.DeleteMembership{Header: hdr(uid, "", at), UserChannel: uc})
		}
	}
	dbA, dbB := openStore(t, t.TempDir()), openStore(t, t.TempDir())
	a := newSM(t, dbA, 1, allSlots(), func(c *fsm.Config) { c.EventCapacity = 3 })
	b := newSM(t, dbB, 1, allSlots(), func(c *fsm.Config) { c.EventCapacity = 3 })
	for i, c := range cmds {
		apply(t, a, uint64(i+1), c)
	}
	apply(t, b, 1, cmds...)
	sa := spanWithout(t, dbA, 1, meta.SysKey(1, meta.SysApplied))
	sb := spanWithout(t, dbB, 1, meta.SysKey(1, meta.SysApplied))
	sameSpan(t, "replicas", sa, sb)
	checkActivityIndex(t, dbA, 1)
}
