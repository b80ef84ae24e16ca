package meta

import (
	"errors"
	"testing"
)

// TestParseKeyInvertsTheKeyBuilders: every watched table's primary key, as
// keys.go builds it (NUL bytes and separators in the parts included),
// parses back to what it was built from; a clear's prefix parses to the
// parent.
func TestParseKeyInvertsTheKeyBuilders(t *testing.T) {
	const g, s = 7, 42
	uid, ch, key := "u\x00\x01\xff-1", "c\x00h", "k\x00\x01"
	pk := func(full []byte) []byte { return full[8:] }
	cases := []struct {
		table Table
		full  []byte
		clear bool
		want  KeyParts
	}{
		{TableUser, UserKey(g, s, uid), false, KeyParts{UID: uid}},
		{TableSystemUID, SystemUIDKey(g, s, uid), false, KeyParts{UID: uid}},
		{TableKV, KVKey(g, s, key), false, KeyParts{Key: key}},
		{TableDevice, DeviceKey(g, s, uid, 3), false, KeyParts{UID: uid, DeviceFlag: 3}},
		{TableDevice, DevicePrefix(g, s, uid), true, KeyParts{UID: uid}},
		{TablePlugin, PluginKey(g, s, uid, "p\x00"), false, KeyParts{UID: uid, Plugin: "p\x00"}},
		{TableChannel, ChannelKey(g, s, TableChannel, 2, ch), false, KeyParts{ChannelType: 2, ChannelID: ch}},
		{TableRuntime, ChannelKey(g, s, TableRuntime, 2, ch), false, KeyParts{ChannelType: 2, ChannelID: ch}},
		{TableSubscriber, ChannelMemberKey(g, s, TableSubscriber, 2, ch, uid), false, KeyParts{ChannelType: 2, ChannelID: ch, UID: uid}},
		{TableDenylist, ChannelListPrefix(g, s, TableDenylist, 2, ch), true, KeyParts{ChannelType: 2, ChannelID: ch}},
		{TableAllowlist, ChannelMemberKey(g, s, TableAllowlist, 2, ch, ""), false, KeyParts{ChannelType: 2, ChannelID: ch}},
		{TableMembership, UserChannelKey(g, s, TableMembership, uid, 2, ch), false, KeyParts{UID: uid, ChannelType: 2, ChannelID: ch}},
		{TableCmdBinding, UserChannelKey(g, s, TableCmdBinding, uid, 2, ch), false, KeyParts{UID: uid, ChannelType: 2, ChannelID: ch}},
	}
	for _, c := range cases {
		if !c.table.Watched() {
			t.Errorf("table %d is not watched", c.table)
		}
		got, err := ParseKey(c.table, pk(c.full), c.clear)
		if err != nil || got != c.want {
			t.Errorf("table %d key %x: %+v, %v; want %+v", c.table, c.full, got, err, c.want)
		}
	}
	for _, bad := range []struct {
		table Table
		pk    []byte
	}{{TableChannel, nil}, {TableDevice, []byte("u\x00\x01")}, {TableDevice, []byte("u")}, {TableSubscriber, []byte{1, 'c', 0, 7}}, {TableOutbox, []byte{1}}} {
		if _, err := ParseKey(bad.table, bad.pk, false); !errors.Is(err, ErrMalformed) {
			t.Errorf("table %d key %x: %v, want malformed", bad.table, bad.pk, err)
		}
	}
}

// FuzzParseKey: any bytes give a key or ErrMalformed, never a panic; a
// parsed key of a fixed layout builds back to the same bytes.
func FuzzParseKey(f *testing.F) {
	f.Add(uint16(TableSubscriber), []byte{2, 'c', 0, 0xFF, 0, 1, 'u'}, false)
	f.Add(uint16(TableDevice), []byte{'u', 0, 1, 3}, false)
	f.Add(uint16(TableMembership), []byte{'u', 0, 1}, true)
	f.Fuzz(func(t *testing.T, table uint16, pk []byte, clear bool) {
		k, err := ParseKey(Table(table), pk, clear)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if Table(table) == TableSubscriber && !clear {
			if again := ChannelMemberKey(0, 0, TableSubscriber, k.ChannelType, k.ChannelID, k.UID)[8:]; string(again) != string(pk) {
				t.Fatalf("%x parsed to %+v, which builds %x", pk, k, again)
			}
		}
	})
}

// TestWatchedTablesAreNamedAndDecode: every watched table, and no other,
// has a resource name (each its own), and DecodeRow gives back the entity
// its row was encoded from.
func TestWatchedTablesAreNamedAndDecode(t *testing.T) {
	rows := map[Table][]byte{
		TableUser: EncodeUser(&User{UID: "u"}), TableKV: EncodeKV(&KV{Key: "k"}), TableDevice: EncodeDevice(&Device{UID: "u"}),
		TableSystemUID: EncodeSystemUID(&SystemUID{UID: "u"}), TablePlugin: EncodePluginBinding(&PluginBinding{UID: "u"}),
		TableChannel: EncodeChannel(&Channel{ChannelInfo: ChannelInfo{ID: "c"}}), TableSubscriber: EncodeChannelMember(&ChannelMember{UID: "u"}),
		TableDenylist: EncodeChannelMember(&ChannelMember{UID: "u"}), TableAllowlist: EncodeChannelMember(&ChannelMember{UID: "u"}),
		TableMembership: EncodeMembership(&Membership{UID: "u"}), TableCmdBinding: EncodeCmdBinding(&CmdBinding{UID: "u"}),
		TableRuntime: EncodeChannelRuntime(&ChannelRuntime{ChannelID: "c"}),
	}
	names := map[string]Table{}
	for t16 := range 1 << 8 {
		tb := Table(t16)
		name := tb.Resource()
		if (name != "") != tb.Watched() {
			t.Errorf("table %d: watched %v, resource %q", tb, tb.Watched(), name)
		}
		if name == "" {
			if _, err := DecodeRow(tb, []byte{1}); !errors.Is(err, ErrMalformed) {
				t.Errorf("table %d is not watched: DecodeRow %v, want malformed", tb, err)
			}
			continue
		}
		if other, dup := names[name]; dup {
			t.Errorf("tables %d and %d are both %q", other, tb, name)
		}
		names[name] = tb
		v, err := DecodeRow(tb, rows[tb])
		w, ok := v.(walker)
		if err != nil || !ok || string(encodeEntity(w)) != string(rows[tb]) {
			t.Errorf("%s: DecodeRow %#v, %v", name, v, err)
		}
	}
	if len(names) != len(rows) {
		t.Errorf("%d resources named, %d watched tables with a row here", len(names), len(rows))
	}
}
