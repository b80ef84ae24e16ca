package fsm_test

import (
	"fmt"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// FuzzChannelListCounts runs arbitrary sequences of channel, list, device
// and user commands — several per entry, so later commands read earlier
// ones (and their range deletions) through the batch — and checks that
// nothing panics or fails the Update, and that every channel's three counts
// equal the rows of its lists. Run with
//
//	go test -run '^$' -fuzz FuzzChannelListCounts -fuzztime 30s ./internal/engine/fsm/
func FuzzChannelListCounts(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 1, 2, 3, 3, 2, 1, 4, 0, 0, 0, 1, 5})
	f.Add([]byte{0, 1, 1, 9, 1, 9, 5, 0, 0, 1, 1, 9, 2, 9, 7, 7})
	f.Add([]byte{8, 0, 9, 1, 9, 1, 10, 0, 11, 0, 8, 0, 9, 2})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 400 {
			return
		}
		db := openStore(t, t.TempDir())
		s := newSM(t, db, 1, allSlots())
		ids := []string{"c0", "c1"}
		uids := []string{"a", "b", "c", "d"}
		var cmds []meta.Command
		var idx uint64
		flush := func() {
			if len(cmds) > 0 {
				idx++
				apply(t, s, idx, cmds...)
				cmds = nil
			}
		}
		for i := 0; i+1 < len(prog); i += 2 {
			op, arg := prog[i]%13, prog[i+1]
			id := ids[arg%2]
			l := meta.ChannelList(1 + (arg/2)%3)
			var some []string
			for j, u := range uids {
				if arg&(1<<(j+4)) != 0 {
					some = append(some, u, u) // every uid twice: set semantics
				}
			}
			h := hdr(id, "", int64(i))
			switch op {
			case 0:
				cmds = append(cmds, &meta.CreateChannel{Header: h, Channel: meta.ChannelInfo{Type: 1, ID: id}})
			case 1:
				cmds = append(cmds, &meta.AddChannelMembers{Header: h, ChannelMembers: meta.ChannelMembers{List: l, ChannelType: 1, ChannelID: id, UIDs: some}})
			case 2:
				cmds = append(cmds, &meta.RemoveChannelMembers{Header: h, ChannelMembers: meta.ChannelMembers{List: l, ChannelType: 1, ChannelID: id, UIDs: some}})
			case 3:
				cmds = append(cmds, &meta.DeleteChannelMember{Header: h, List: l, ChannelType: 1, ChannelID: id, UID: uids[arg%4]})
			case 4:
				cmds = append(cmds, &meta.DeleteChannel{Header: h, ChannelType: 1, ChannelID: id})
			case 5:
				cmds = append(cmds, &meta.PutChannel{Header: h, Channel: meta.ChannelInfo{Type: 1, ID: id, Large: arg%2 == 0}})
			case 6, 7:
				flush()
			case 8:
				cmds = append(cmds, createUser(uids[arg%4], "", 1))
			case 9:
				cmds = append(cmds, putDevice(uids[arg%4], arg, "t", 1), putPlugin(uids[arg%4], fmt.Sprint("p", arg%3), ""))
			case 10:
				cmds = append(cmds, delUser(uids[arg%4]))
			case 11:
				cmds = append(cmds, &meta.DeleteDevice{Header: hdr(uids[arg%4], "", 1), UID: uids[arg%4], Flag: arg})
			case 12:
				cmds = append(cmds, &meta.DeletePlugin{Header: hdr(uids[arg%4], "", 1), UID: uids[arg%4], PluginNo: fmt.Sprint("p", arg%3)})
			}
		}
		flush()
		checkListCounts(t, db, 1)
		checkUserRows(t, db, 1)
	})
}

// checkListCounts fails unless every channel row's counts equal its lists' rows.
func checkListCounts(t *testing.T, db *store.DB, g slotstore.GroupID) {
	t.Helper()
	rows := span(t, db, g)
	count := func(p []byte) uint64 {
		n := uint64(0)
		for _, r := range rows {
			if len(r.k) >= len(p) && string(r.k[:len(p)]) == string(p) {
				n++
			}
		}
		return n
	}
	for _, r := range rows {
		_, hs, tbl, _, ok := meta.SplitRowKey(r.k)
		if !ok || tbl != meta.TableChannel {
			continue
		}
		c, err := meta.DecodeChannel(r.v)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []meta.ChannelList{meta.ListSubscribers, meta.ListDenylist, meta.ListAllowlist} {
			if got := count(meta.ChannelListPrefix(g, hs, l.Table(), c.Type, c.ID)); got != *c.Count(l) {
				t.Fatalf("channel %d/%s: %s count %d, %d rows", c.Type, c.ID, l, *c.Count(l), got)
			}
		}
	}
	// No list row outlives its channel.
	for _, r := range rows {
		_, _, tbl, _, ok := meta.SplitRowKey(r.k)
		if ok && (tbl == meta.TableSubscriber || tbl == meta.TableDenylist || tbl == meta.TableAllowlist) {
			m, err := meta.DecodeChannelMember(r.v)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, id := range []string{"c0", "c1"} {
				for _, l := range []meta.ChannelList{meta.ListSubscribers, meta.ListDenylist, meta.ListAllowlist} {
					k := meta.ChannelMemberKey(g, slotstore.HashSlotOfString(id), l.Table(), 1, id, m.UID)
					if string(k) == string(r.k) {
						ch := meta.ChannelKey(g, slotstore.HashSlotOfString(id), meta.TableChannel, 1, id)
						found = count(ch) == 1
					}
				}
			}
			if !found {
				t.Fatalf("list row %x without its channel", r.k)
			}
		}
	}
}

// checkUserRows fails unless every device and plugin binding belongs to an
// existing user and every binding has its index row and vice versa.
func checkUserRows(t *testing.T, db *store.DB, g slotstore.GroupID) {
	t.Helper()
	keys := map[string]bool{}
	rows := span(t, db, g)
	for _, r := range rows {
		keys[string(r.k)] = true
	}
	bindings, index := 0, 0
	for _, r := range rows {
		_, hs, tbl, _, ok := meta.SplitRowKey(r.k)
		if !ok {
			continue
		}
		switch tbl {
		case meta.TableDevice:
			d, err := meta.DecodeDevice(r.v)
			if err != nil || !keys[string(meta.UserKey(g, hs, d.UID))] {
				t.Fatalf("device %x without its user (%v)", r.k, err)
			}
		case meta.TablePlugin:
			b, err := meta.DecodePluginBinding(r.v)
			if err != nil || !keys[string(meta.UserKey(g, hs, b.UID))] || !keys[string(meta.PluginIndexKey(g, hs, b.PluginNo, b.UID))] {
				t.Fatalf("binding %x without its user or index row (%v)", r.k, err)
			}
			bindings++
		case meta.TablePluginIndex:
			index++
		}
	}
	if bindings != index {
		t.Fatalf("%d bindings, %d index rows", bindings, index)
	}
}
