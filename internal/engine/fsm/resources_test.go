package fsm_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Apply and lookup tests of devices, system UIDs, plugin bindings, channels
// and channel lists.

// stepper applies entries at consecutive indexes.
type stepper struct {
	t   *testing.T
	s   *fsm.StateMachine
	idx uint64
}

func (st *stepper) apply(cmds ...meta.Command) []meta.Result {
	st.t.Helper()
	st.idx++
	return apply(st.t, st.s, st.idx, cmds...)
}

func (st *stepper) ok(cmds ...meta.Command) []meta.Result {
	st.t.Helper()
	return mustOK(st.t, st.apply(cmds...))
}

func (st *stepper) lookup(q meta.Query) any {
	st.t.Helper()
	v, err := st.s.Lookup(q)
	if err != nil {
		st.t.Fatalf("lookup %T: %v", q, err)
	}
	return v
}

func putDevice(uid string, flag uint8, token string, timeMs int64) *meta.PutDevice {
	return &meta.PutDevice{Header: hdr(uid, "", timeMs), UID: uid, Flag: flag, Token: token}
}

func devicesOf(st *stepper, uid string, from uint16, limit int) *meta.DevicePage {
	st.t.Helper()
	v, _ := st.lookup(&meta.ListDevices{HashSlot: slotstore.HashSlotOfString(uid), UID: uid, From: from, Limit: limit}).(*meta.DevicePage)
	return v
}

func flags(p *meta.DevicePage) []uint8 {
	var out []uint8
	for _, d := range p.Devices {
		out = append(out, d.Flag)
	}
	return out
}

func TestDeviceCommands(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	st := &stepper{t: t, s: newSM(t, db, 1, allSlots())}

	unchanged(t, db, 1, "a device of an absent user", func() {
		wantCode(t, st.apply(putDevice("u", 1, "t", 100))[0], slotstore.CodeNotFound)
	})
	if devicesOf(st, "u", 0, 10) != nil {
		t.Fatal("an absent user lists devices")
	}
	st.ok(createUser("u", "U", 50))
	r := st.ok(putDevice("u", 1, "t1", 100))[0]
	d, err := meta.DecodeDevice(r.Value)
	if err != nil || *d != (meta.Device{UID: "u", Flag: 1, Token: "t1", CreatedAtMs: 100, UpdatedAtMs: 100, Revision: r.Revision}) {
		t.Fatalf("put device %+v, %v", d, err)
	}
	r2 := st.ok(&meta.PutDevice{Header: hdr("u", "", 200), UID: "u", Flag: 1, Token: "t2", Level: 1})[0]
	got := st.lookup(&meta.GetDevice{HashSlot: slotstore.HashSlotOfString("u"), UID: "u", Flag: 1}).(*meta.Device)
	if *got != (meta.Device{UID: "u", Flag: 1, Token: "t2", Level: 1, CreatedAtMs: 100, UpdatedAtMs: 200, Revision: r2.Revision}) || r2.Revision <= r.Revision {
		t.Fatalf("after upsert %+v", got)
	}
	if v := st.lookup(&meta.GetDevice{HashSlot: slotstore.HashSlotOfString("u"), UID: "u", Flag: 2}).(*meta.Device); v != nil {
		t.Fatalf("absent device %+v", v)
	}
	for _, f := range []uint8{255, 0, 7} {
		st.ok(putDevice("u", f, "t", 300))
	}
	if p := devicesOf(st, "u", 0, 10); !slices.Equal(flags(p), []uint8{0, 1, 7, 255}) || p.More {
		t.Fatalf("devices %v more %v", flags(p), p.More)
	}
	if p := devicesOf(st, "u", 1, 2); !slices.Equal(flags(p), []uint8{1, 7}) || !p.More {
		t.Fatalf("page from 1 limit 2: %v more %v", flags(p), p.More)
	}
	if p := devicesOf(st, "u", 8, 2); !slices.Equal(flags(p), []uint8{255}) || p.More {
		t.Fatalf("page from 8: %v more %v", flags(p), p.More)
	}
	if p := devicesOf(st, "u", 256, 2); len(p.Devices) != 0 || p.More {
		t.Fatalf("page from 256: %v", flags(p))
	}
	st.ok(&meta.DeleteDevice{Header: hdr("u", "", 400), UID: "u", Flag: 7})
	unchanged(t, db, 1, "deleting an absent device", func() {
		wantCode(t, st.apply(&meta.DeleteDevice{Header: hdr("u", "", 400), UID: "u", Flag: 7})[0], slotstore.CodeNotFound)
	})
	if p := devicesOf(st, "u", 0, 10); !slices.Equal(flags(p), []uint8{0, 1, 255}) {
		t.Fatalf("after delete %v", flags(p))
	}
}

func pluginPage(st *stepper, q meta.Query) *meta.PluginPage {
	st.t.Helper()
	v, _ := st.lookup(q).(*meta.PluginPage)
	return v
}

func bindingUIDs(p *meta.PluginPage) []string {
	var out []string
	for _, b := range p.Bindings {
		out = append(out, b.UID+"/"+b.PluginNo)
	}
	return out
}

func putPlugin(uid, plugin, config string) *meta.PutPlugin {
	return &meta.PutPlugin{Header: hdr(uid, "", 100), UID: uid, PluginNo: plugin, Config: config}
}

func TestUserDeleteCascadesToDevicesAndPlugins(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	st := &stepper{t: t, s: newSM(t, db, 1, allSlots())}
	users := keysIn("cascade", 2, []slotstore.HashSlot{9}) // one hash slot: the rows interleave
	gone, stays := users[0], users[1]
	for _, u := range users {
		st.ok(createUser(u, "", 1), putDevice(u, 0, "a", 2), putDevice(u, 255, "b", 2), putPlugin(u, "p1", "{}"), putPlugin(u, "p2", ""))
	}
	st.ok(delUser(gone))
	for tbl, want := range map[meta.Table]int{meta.TableUser: 1, meta.TableDevice: 2, meta.TablePlugin: 2, meta.TablePluginIndex: 2} {
		if n := countTable(t, db, 1, tbl); n != want {
			t.Fatalf("table %d holds %d rows after deleting a user, want %d (the other user's)", tbl, n, want)
		}
	}
	p := pluginPage(st, &meta.ScanPluginUsers{PluginNo: "p1", FromSlot: 0, ToSlot: 255, Limit: 10})
	if !slices.Equal(bindingUIDs(p), []string{stays + "/p1"}) {
		t.Fatalf("p1 users %v", bindingUIDs(p))
	}

	// Within one entry, the batch sees its own range deletion: a device
	// written before the delete is gone, one written after it (to the user
	// created again) stays, and a device of the deleted user is refused.
	rs := st.apply(
		createUser(gone, "", 10),
		putDevice(gone, 1, "old", 11),
		putPlugin(gone, "p3", ""),
		delUser(gone),
		putDevice(gone, 2, "refused", 12),
		createUser(gone, "", 13),
		putDevice(gone, 3, "new", 14),
	)
	for i, want := range []slotstore.Code{"", "", "", "", slotstore.CodeNotFound, "", ""} {
		wantCode(t, rs[i], want)
	}
	if p := devicesOf(st, gone, 0, 10); !slices.Equal(flags(p), []uint8{3}) {
		t.Fatalf("devices after delete and re-create in one entry: %v", flags(p))
	}
	if p := pluginPage(st, &meta.ListUserPlugins{HashSlot: 9, UID: gone, Limit: 10}); len(p.Bindings) != 0 {
		t.Fatalf("plugins after delete and re-create in one entry: %v", bindingUIDs(p))
	}
	if n := countTable(t, db, 1, meta.TablePluginIndex); n != 2 {
		t.Fatalf("%d index rows, want the 2 of %s", n, stays)
	}
}

func TestPluginCommandsAndScan(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	slots := slotRange(0, 64)
	st := &stepper{t: t, s: newSM(t, db, 1, slots)}
	unchanged(t, db, 1, "binding an absent user", func() {
		wantCode(t, st.apply(putPlugin(keysIn("nobody", 1, slots)[0], "p", ""))[0], slotstore.CodeNotFound)
	})
	users := keysIn("pl", 30, slots)
	for i, u := range users {
		st.ok(createUser(u, "", 1), putPlugin(u, "all", fmt.Sprint(i)))
		if i%2 == 0 {
			st.ok(putPlugin(u, "even", ""))
		}
	}
	// A re-bind keeps the creation time and changes the config.
	r := st.ok(&meta.PutPlugin{Header: hdr(users[0], "", 999), UID: users[0], PluginNo: "all", Config: "new"})[0]
	b, _ := meta.DecodePluginBinding(r.Value)
	if b.Config != "new" || b.CreatedAtMs != 100 || b.UpdatedAtMs != 999 {
		t.Fatalf("re-bind %+v", b)
	}
	// The scan of "even" over the group's slots, in pages of 4: (slot, uid) order.
	var want []string
	for i, u := range users {
		if i%2 == 0 {
			want = append(want, u)
		}
	}
	slices.SortFunc(want, func(a, b string) int {
		if sa, sb := slotstore.HashSlotOfString(a), slotstore.HashSlotOfString(b); sa != sb {
			return int(sa) - int(sb)
		}
		return bytes.Compare([]byte(a), []byte(b))
	})
	var got []string
	q := &meta.ScanPluginUsers{PluginNo: "even", FromSlot: 0, ToSlot: 63, Limit: 4}
	for range 100 {
		p := pluginPage(st, q)
		for _, b := range p.Bindings {
			if b.PluginNo != "even" {
				t.Fatalf("binding %+v in the scan of even", b)
			}
			got = append(got, b.UID)
		}
		if !p.More {
			break
		}
		last := p.Bindings[len(p.Bindings)-1].UID
		q = &meta.ScanPluginUsers{PluginNo: "even", FromSlot: slotstore.HashSlotOfString(last), ToSlot: 63, AfterUID: last, Limit: 4}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scan of even:\n got %v\nwant %v", got, want)
	}
	// Unbinding deletes the index row too.
	st.ok(&meta.DeletePlugin{Header: hdr(want[0], "", 5), UID: want[0], PluginNo: "even"})
	wantCode(t, st.apply(&meta.DeletePlugin{Header: hdr(want[0], "", 5), UID: want[0], PluginNo: "even"})[0], slotstore.CodeNotFound)
	if p := pluginPage(st, &meta.ScanPluginUsers{PluginNo: "even", FromSlot: 0, ToSlot: 63, Limit: 1000}); len(p.Bindings) != len(want)-1 {
		t.Fatalf("%d bindings after unbinding one of %d", len(p.Bindings), len(want))
	}
	// At most MaxPluginsPerUser bindings per user; re-binding one is fine.
	u := users[1]
	var cmds []meta.Command
	for i := 1; i < meta.MaxPluginsPerUser; i++ {
		cmds = append(cmds, putPlugin(u, fmt.Sprintf("x%03d", i), ""))
	}
	st.ok(cmds...)
	unchanged(t, db, 1, "one binding too many", func() {
		wantCode(t, st.apply(putPlugin(u, "one-more", ""))[0], slotstore.CodeConflict)
	})
	st.ok(putPlugin(u, "x001", "again"))
	// Lookups outside the owned slots answer wrong_group.
	other := keysIn("out", 1, slotRange(64, 256))[0]
	for _, q := range []meta.Query{
		&meta.ListUserPlugins{HashSlot: slotstore.HashSlotOfString(other), UID: other},
		&meta.ScanPluginUsers{PluginNo: "all", FromSlot: 60, ToSlot: 64},
		&meta.ListDevices{HashSlot: 200, UID: other},
		&meta.GetDevice{HashSlot: 200, UID: other},
		&meta.ScanSystemUIDs{HashSlot: 200},
		&meta.GetChannel{HashSlot: 200, ChannelType: 1, ChannelID: "c"},
		&meta.ScanChannelList{HashSlot: 200, List: meta.ListSubscribers, ChannelType: 1, ChannelID: "c"},
		&meta.GetChannelMember{HashSlot: 200, List: meta.ListSubscribers, ChannelType: 1, ChannelID: "c", UID: "u"},
	} {
		if _, err := st.s.Lookup(q); !isCode(err, slotstore.CodeWrongGroup) {
			t.Errorf("%T outside the owned slots: %v", q, err)
		}
	}
	if _, err := st.s.Lookup(&meta.ScanPluginUsers{PluginNo: "all", FromSlot: 5, ToSlot: 4}); !isCode(err, slotstore.CodeInvalidArgument) {
		t.Errorf("backwards slot range: %v", err)
	}
}

func TestSystemUIDCommands(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	st := &stepper{t: t, s: newSM(t, db, 1, allSlots())}
	add := func(uid string, timeMs int64) *meta.AddSystemUID {
		return &meta.AddSystemUID{Header: hdr(meta.SystemUIDsRouteKey, "", timeMs), UID: uid}
	}
	r1 := st.ok(add("bot", 100))[0]
	var r2 meta.Result
	unchanged(t, db, 1, "adding a member again", func() { r2 = st.ok(add("bot", 200))[0] })
	if r1.Revision != r2.Revision || !bytes.Equal(r1.Value, r2.Value) {
		t.Fatalf("second add answered rev %d %x, first %d %x", r2.Revision, r2.Value, r1.Revision, r1.Value)
	}
	var want []string
	for i := range 9 {
		uid := fmt.Sprintf("s%d", 8-i)
		st.ok(add(uid, 1))
		want = append(want, uid)
	}
	want = append(want, "bot")
	slices.Sort(want)
	hs := slotstore.HashSlotOfString(meta.SystemUIDsRouteKey)
	var got []string
	after := ""
	for range 20 {
		p := st.lookup(&meta.ScanSystemUIDs{HashSlot: hs, AfterUID: after, Limit: 3}).(*meta.SystemUIDPage)
		for _, s := range p.UIDs {
			got = append(got, s.UID)
		}
		if !p.More {
			break
		}
		after = p.UIDs[len(p.UIDs)-1].UID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scan %v, want %v", got, want)
	}
	st.ok(&meta.RemoveSystemUID{Header: hdr(meta.SystemUIDsRouteKey, "", 1), UID: "bot"})
	wantCode(t, st.apply(&meta.RemoveSystemUID{Header: hdr(meta.SystemUIDsRouteKey, "", 1), UID: "bot"})[0], slotstore.CodeNotFound)
	// A system UID command must carry the reserved key's hash slot.
	bad := add("x", 1)
	bad.HashSlot = (hs + 1) % 256
	wantCode(t, st.apply(bad)[0], slotstore.CodeInvalidArgument)
}

func chInfo(channelType uint8, id string) meta.ChannelInfo {
	return meta.ChannelInfo{Type: channelType, ID: id}
}

func members(list meta.ChannelList, id string, uids ...string) meta.ChannelMembers {
	return meta.ChannelMembers{List: list, ChannelType: 1, ChannelID: id, UIDs: uids}
}

func addMembers(list meta.ChannelList, id string, uids ...string) *meta.AddChannelMembers {
	return &meta.AddChannelMembers{Header: hdr(id, "", 500), ChannelMembers: members(list, id, uids...)}
}

func removeMembers(list meta.ChannelList, id string, uids ...string) *meta.RemoveChannelMembers {
	return &meta.RemoveChannelMembers{Header: hdr(id, "", 600), ChannelMembers: members(list, id, uids...)}
}

func listChange(t *testing.T, r meta.Result) meta.ListChange {
	t.Helper()
	c, err := meta.DecodeListChange(r.Value)
	if err != nil || !r.OK() {
		t.Fatalf("list change %s %q: %v", r.Code, r.Message, err)
	}
	return *c
}

func getChannel(st *stepper, id string) *meta.Channel {
	st.t.Helper()
	return st.lookup(&meta.GetChannel{HashSlot: slotstore.HashSlotOfString(id), ChannelType: 1, ChannelID: id}).(*meta.Channel)
}

func listed(st *stepper, list meta.ChannelList, id string) []string {
	st.t.Helper()
	var out []string
	after := ""
	for range 1000 {
		p, _ := st.lookup(&meta.ScanChannelList{HashSlot: slotstore.HashSlotOfString(id), List: list, ChannelType: 1, ChannelID: id,
			AfterUID: after, Limit: 2}).(*meta.ChannelMemberPage)
		if p == nil {
			return nil
		}
		for _, m := range p.Members {
			out = append(out, m.UID)
		}
		if !p.More {
			return out
		}
		after = p.Members[len(p.Members)-1].UID
	}
	st.t.Fatal("listing does not end")
	return nil
}

func TestChannelCommands(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	st := &stepper{t: t, s: newSM(t, db, 1, allSlots())}
	info := meta.ChannelInfo{Type: 1, ID: "c", Ban: true, Extra: "{}"}
	r1 := st.ok(&meta.CreateChannel{Header: hdr("c", "", 100), Channel: info})[0]
	c1, _ := meta.DecodeChannel(r1.Value)
	if *c1 != (meta.Channel{ChannelInfo: meta.ChannelInfo{Type: 1, ID: "c", Ban: true, Extra: "{}"}, CreatedAtMs: 100, UpdatedAtMs: 100, Revision: r1.Revision}) {
		t.Fatalf("created %+v", c1)
	}
	unchanged(t, db, 1, "a conflicting create", func() {
		r := st.apply(&meta.CreateChannel{Header: hdr("c", "", 200), Channel: chInfo(1, "c")})[0]
		wantCode(t, r, slotstore.CodeConflict)
		if !bytes.Equal(r.Value, r1.Value) {
			t.Fatal("the conflict does not carry the existing channel")
		}
	})
	// Another type with the same id is another channel.
	st.ok(&meta.CreateChannel{Header: hdr("c", "", 200), Channel: chInfo(2, "c")})
	st.ok(addMembers(meta.ListSubscribers, "c", "a", "b"))
	// Put replaces the flags and keeps the counts and the creation time.
	st.ok(&meta.PutChannel{Header: hdr("c", "", 300), Channel: meta.ChannelInfo{Type: 1, ID: "c", Large: true}})
	if c := getChannel(st, "c"); c.Ban || !c.Large || c.Extra != "" || c.SubscriberCount != 2 || c.SubscriberVersion != 1 || c.CreatedAtMs != 100 || c.UpdatedAtMs != 300 {
		t.Fatalf("after put %+v", c)
	}
	st.ok(&meta.PutChannel{Header: hdr("new", "", 300), Channel: chInfo(1, "new")})
	if c := getChannel(st, "new"); c == nil || c.CreatedAtMs != 300 {
		t.Fatalf("put of a new channel: %+v", c)
	}
	// Malformed identities are refused and write nothing.
	unchanged(t, db, 1, "malformed channel commands", func() {
		for _, c := range []meta.Command{
			&meta.CreateChannel{Header: hdr("z", "", 1), Channel: chInfo(0, "z")},
			&meta.PutChannel{Header: hdr("", "", 1), Channel: chInfo(1, "")},
			&meta.AddChannelMembers{Header: hdr("c", "", 1), ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 0, ChannelID: "c", UIDs: []string{"a"}}},
			addMembers(meta.ListSubscribers, "c", "a", ""),
		} {
			wantCode(t, st.apply(c)[0], slotstore.CodeInvalidArgument)
		}
	})
	// Delete removes the row and its three lists (not the other type's).
	st.ok(addMembers(meta.ListDenylist, "c", "x"), addMembers(meta.ListAllowlist, "c", "y", "z"))
	st.ok(&meta.AddChannelMembers{Header: hdr("c", "", 1), ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 2, ChannelID: "c", UIDs: []string{"q"}}})
	st.ok(&meta.DeleteChannel{Header: hdr("c", "", 400), ChannelType: 1, ChannelID: "c"})
	wantCode(t, st.apply(&meta.DeleteChannel{Header: hdr("c", "", 400), ChannelType: 1, ChannelID: "c"})[0], slotstore.CodeNotFound)
	if getChannel(st, "c") != nil || listed(st, meta.ListSubscribers, "c") != nil {
		t.Fatal("the channel or its list survived the delete")
	}
	for tbl, want := range map[meta.Table]int{meta.TableSubscriber: 1, meta.TableDenylist: 0, meta.TableAllowlist: 0} {
		if n := countTable(t, db, 1, tbl); n != want {
			t.Fatalf("table %d holds %d rows after the delete, want %d", tbl, n, want)
		}
	}
	// The list commands of an absent channel are not_found and write nothing.
	unchanged(t, db, 1, "list commands of an absent channel", func() {
		for _, c := range []meta.Command{
			addMembers(meta.ListSubscribers, "c", "a"),
			removeMembers(meta.ListDenylist, "c", "a"),
			&meta.DeleteChannelMember{Header: hdr("c", "", 1), List: meta.ListAllowlist, ChannelType: 1, ChannelID: "c", UID: "y"},
		} {
			wantCode(t, st.apply(c)[0], slotstore.CodeNotFound)
		}
	})
	// Delete, create and add in one entry: the batch sees its own range
	// deletion, so the old members are gone and the count is exact.
	st.ok(&meta.CreateChannel{Header: hdr("c", "", 500), Channel: chInfo(1, "c")}, addMembers(meta.ListSubscribers, "c", "old1", "old2"))
	rs := st.ok(
		&meta.DeleteChannel{Header: hdr("c", "", 600), ChannelType: 1, ChannelID: "c"},
		&meta.CreateChannel{Header: hdr("c", "", 600), Channel: chInfo(1, "c")},
		addMembers(meta.ListSubscribers, "c", "old1", "new"),
	)
	if ch := listChange(t, rs[2]); ch != (meta.ListChange{Changed: 2, Count: 2}) {
		t.Fatalf("add after re-create in one entry: %+v", ch)
	}
	if got := listed(st, meta.ListSubscribers, "c"); !slices.Equal(got, []string{"new", "old1"}) {
		t.Fatalf("members after re-create in one entry: %v", got)
	}
}

func TestChannelListCountsNeverDrift(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	st := &stepper{t: t, s: newSM(t, db, 1, allSlots())}
	st.ok(&meta.CreateChannel{Header: hdr("g", "", 1), Channel: chInfo(1, "g")})

	for _, l := range []meta.ChannelList{meta.ListSubscribers, meta.ListDenylist, meta.ListAllowlist} {
		// Duplicates in one command, across commands of one entry, across entries.
		rs := st.ok(addMembers(l, "g", "a", "b", "a"), addMembers(l, "g", "b", "c"))
		if a, b := listChange(t, rs[0]), listChange(t, rs[1]); a != (meta.ListChange{Changed: 2, Count: 2}) || b != (meta.ListChange{Changed: 1, Count: 3}) {
			t.Fatalf("%s adds: %+v %+v", l, a, b)
		}
		var r meta.Result
		unchanged(t, db, 1, "adding members already there", func() { r = st.ok(addMembers(l, "g", "c", "a"))[0] })
		if ch := listChange(t, r); ch != (meta.ListChange{Changed: 0, Count: 3}) || r.Revision != getChannel(st, "g").Revision {
			t.Fatalf("%s no-op add: %+v rev %d", l, ch, r.Revision)
		}
		rs = st.ok(removeMembers(l, "g", "a", "a", "zz"), removeMembers(l, "g", "a", "b"))
		if a, b := listChange(t, rs[0]), listChange(t, rs[1]); a != (meta.ListChange{Changed: 1, Count: 2}) || b != (meta.ListChange{Changed: 1, Count: 1}) {
			t.Fatalf("%s removes: %+v %+v", l, a, b)
		}
		del := &meta.DeleteChannelMember{Header: hdr("g", "", 1), List: l, ChannelType: 1, ChannelID: "g", UID: "c"}
		if ch := listChange(t, st.ok(del)[0]); ch != (meta.ListChange{Changed: 1, Count: 0}) {
			t.Fatalf("%s delete one: %+v", l, ch)
		}
		wantCode(t, st.apply(del)[0], slotstore.CodeNotFound)
		st.ok(addMembers(l, "g", "keep"))
	}
	c := getChannel(st, "g")
	if c.SubscriberCount != 1 || c.DenylistCount != 1 || c.AllowlistCount != 1 {
		t.Fatalf("counts %+v", c)
	}
	// Subscriber changes bump SubscriberVersion; other lists do not.
	// Two adds, two removes, one delete and the add of keep; the no-op add
	// changed nothing.
	if c.SubscriberVersion != 6 {
		t.Fatalf("subscriber version %d, want 6", c.SubscriberVersion)
	}

	// A long random run: the stored count equals the listed members and a model set.
	model := map[string]bool{"keep": true}
	seed := uint64(7)
	for i := 0; i < 200; i++ {
		var uids []string
		for j := 0; j < 1+int(seed%9); j++ {
			seed = seed*6364136223846793005 + 1442695040888963407
			uids = append(uids, fmt.Sprintf("u%02d", seed>>58))
		}
		add := i%3 != 2
		var c meta.Command = removeMembers(meta.ListSubscribers, "g", uids...)
		if add {
			c = addMembers(meta.ListSubscribers, "g", uids...)
		}
		ch := listChange(t, st.ok(c)[0])
		var changed uint64
		for _, u := range uids {
			if model[u] != add {
				model[u] = add
				changed++
			}
			if !add {
				delete(model, u)
			}
		}
		if ch.Changed != changed || ch.Count != uint64(len(model)) {
			t.Fatalf("step %d: %+v, model changed %d count %d", i, ch, changed, len(model))
		}
	}
	got := listed(st, meta.ListSubscribers, "g")
	if uint64(len(got)) != getChannel(st, "g").SubscriberCount || len(got) != len(model) {
		t.Fatalf("listed %d, count %d, model %d", len(got), getChannel(st, "g").SubscriberCount, len(model))
	}
	for _, u := range got {
		if !model[u] {
			t.Fatalf("%s listed but not in the model", u)
		}
	}
	// Membership test.
	q := &meta.GetChannelMember{HashSlot: slotstore.HashSlotOfString("g"), List: meta.ListSubscribers, ChannelType: 1, ChannelID: "g", UID: "keep"}
	if m := st.lookup(q).(*meta.ChannelMember); m == nil || m.UID != "keep" || m.AddedAtMs != 500 {
		t.Fatalf("membership of keep: %+v", m)
	}
	q.UID = "nobody"
	if m := st.lookup(q).(*meta.ChannelMember); m != nil {
		t.Fatalf("membership of nobody: %+v", m)
	}
}

func TestChannelListIdempotentReplay(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	st := &stepper{t: t, s: newSM(t, db, 1, allSlots())}
	st.ok(&meta.CreateChannel{Header: hdr("g", "", 1), Channel: chInfo(1, "g")})
	first := st.ok(withIdem(addMembers(meta.ListSubscribers, "g", "a", "b"), "k", 10))[0]
	var again meta.Result
	unchanged(t, db, 1, "a replayed add", func() {
		again = st.ok(withIdem(addMembers(meta.ListSubscribers, "g", "a", "b"), "k", 20))[0]
	})
	if !again.Replayed || !bytes.Equal(again.Value, first.Value) {
		t.Fatalf("replay %+v, first %+v", again, first)
	}
	if c := getChannel(st, "g"); c.SubscriberCount != 2 {
		t.Fatalf("count %d", c.SubscriberCount)
	}
}

// TestRangeDeletesSurviveSnapshots: a snapshot taken after range deletions
// carries none of the deleted rows, and a replica recovered from it lists
// what the source lists.
func TestRangeDeletesSurviveSnapshots(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	st := &stepper{t: t, s: newSM(t, db, 1, allSlots())}
	st.ok(createUser("u", "", 1), putDevice("u", 1, "t", 1), putDevice("u", 2, "t", 1))
	st.ok(&meta.CreateChannel{Header: hdr("g", "", 1), Channel: chInfo(1, "g")}, addMembers(meta.ListSubscribers, "g", "a", "b"))
	st.ok(delUser("u"), &meta.DeleteChannel{Header: hdr("g", "", 2), ChannelType: 1, ChannelID: "g"})
	st.ok(createUser("u", "", 3), putDevice("u", 3, "t", 3))
	img := snapshot(t, st.s)

	db2 := openStore(t, t.TempDir())
	r := newSM(t, db2, 1, nil)
	if err := r.RecoverFromSnapshot(bytes.NewReader(img), nil); err != nil {
		t.Fatal(err)
	}
	sameSpan(t, "recovered", span(t, db2, 1), span(t, db, 1))
	rst := &stepper{t: t, s: r, idx: st.idx}
	if p := devicesOf(rst, "u", 0, 10); !slices.Equal(flags(p), []uint8{3}) {
		t.Fatalf("recovered devices %v", flags(p))
	}
	if n := countTable(t, db2, 1, meta.TableSubscriber); n != 0 {
		t.Fatalf("recovered %d subscriber rows", n)
	}
}
