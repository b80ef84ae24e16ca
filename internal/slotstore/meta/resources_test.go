package meta_test

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Codec tests of the device, system UID, plugin, channel and channel-list
// families: every command, entity, query and answer round-trips, and every
// truncation, trailing byte, unknown enum and oversize field is rejected
// with ErrMalformed (never a panic).

func resourceCommands() []meta.Command {
	members := meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 2, ChannelID: "grp-1", UIDs: []string{"a", "b", "a", "用户"}}
	many := make([]string, meta.MaxListUIDs)
	for i := range many {
		many[i] = fmt.Sprintf("u%04d", i)
	}
	return []meta.Command{
		routed(&meta.PutDevice{Header: meta.Header{TimeMs: 7, IdempotencyKey: "d1"}, UID: "u1", Flag: 255, Token: "tok", Level: 1}),
		routed(&meta.PutDevice{UID: strings.Repeat("u", meta.MaxKeyBytes), Token: strings.Repeat("t", meta.MaxDeviceTokenBytes)}),
		routed(&meta.DeleteDevice{Header: meta.Header{TimeMs: -1}, UID: "u1", Flag: 0}),
		routed(&meta.AddSystemUID{Header: meta.Header{TimeMs: math.MaxInt64}, UID: "bot"}),
		routed(&meta.RemoveSystemUID{UID: "bot"}),
		routed(&meta.PutPlugin{UID: "u1", PluginNo: strings.Repeat("p", meta.MaxPluginNoBytes), Config: strings.Repeat("c", meta.MaxPluginConfigBytes)}),
		routed(&meta.PutPlugin{UID: "u1", PluginNo: "p.1-_"}),
		routed(&meta.DeletePlugin{Header: meta.Header{IdempotencyKey: "x"}, UID: "u1", PluginNo: "p"}),
		routed(&meta.CreateChannel{Header: meta.Header{TimeMs: 1}, Channel: meta.ChannelInfo{Type: 1, ID: "c1", Ban: true, Large: true, Extra: `{"a":1}`}}),
		routed(&meta.CreateChannel{Channel: meta.ChannelInfo{Type: 255, ID: strings.Repeat("c", meta.MaxKeyBytes), Disband: true, SendBan: true, AllowStranger: true,
			Extra: strings.Repeat("e", meta.MaxStringBytes)}}),
		routed(&meta.PutChannel{Channel: meta.ChannelInfo{Type: 2, ID: "c2"}}),
		routed(&meta.DeleteChannel{ChannelType: 3, ChannelID: "c3"}),
		routed(&meta.AddChannelMembers{Header: meta.Header{TimeMs: 9}, ChannelMembers: members}),
		routed(&meta.AddChannelMembers{ChannelMembers: meta.ChannelMembers{List: meta.ListAllowlist, ChannelType: 1, ChannelID: "big", UIDs: many}}),
		routed(&meta.RemoveChannelMembers{ChannelMembers: meta.ChannelMembers{List: meta.ListDenylist, ChannelType: 1, ChannelID: "c"}}),
		routed(&meta.RemoveChannelMembers{ChannelMembers: members}),
		routed(&meta.DeleteChannelMember{List: meta.ListAllowlist, ChannelType: 4, ChannelID: "c4", UID: "u"}),
	}
}

func TestResourceCommandsRoundTrip(t *testing.T) {
	seen := map[meta.Op]bool{}
	for i, c := range resourceCommands() {
		enc := mustEncode(c)
		got := mustDecodeCommand(t, enc)
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("sample %d (%T): round trip\n got %+v\nwant %+v", i, c, got, c)
		}
		if !bytes.Equal(mustEncode(got), enc) || got.RouteKey() != c.RouteKey() {
			t.Fatalf("sample %d (%T): re-encoding or route key differs", i, c)
		}
		if meta.Op(enc[1]) != c.Op() {
			t.Fatalf("sample %d: op byte %d, op %d", i, enc[1], c.Op())
		}
		seen[c.Op()] = true
	}
	for _, op := range []meta.Op{10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25} {
		if !seen[op] {
			t.Errorf("no sample of op %d", op)
		}
	}
	// Route keys: the uid, the reserved system key, the channel id.
	for _, tc := range []struct {
		c   meta.Command
		key string
	}{
		{&meta.PutDevice{UID: "u"}, "u"},
		{&meta.AddSystemUID{UID: "u"}, meta.SystemUIDsRouteKey},
		{&meta.RemoveSystemUID{UID: "u"}, meta.SystemUIDsRouteKey},
		{&meta.PutPlugin{UID: "u", PluginNo: "p"}, "u"},
		{&meta.CreateChannel{Channel: meta.ChannelInfo{Type: 1, ID: "c"}}, "c"},
		{&meta.DeleteChannelMember{ChannelID: "c", UID: "u"}, "c"},
		{&meta.AddChannelMembers{ChannelMembers: meta.ChannelMembers{ChannelID: "c"}}, "c"},
	} {
		if tc.c.RouteKey() != tc.key {
			t.Errorf("%T route key %q, want %q", tc.c, tc.c.RouteKey(), tc.key)
		}
	}
}

// TestResourceCommandGoldenEncoding pins the wire format of the new ops.
func TestResourceCommandGoldenEncoding(t *testing.T) {
	for _, tc := range []struct {
		c    meta.Command
		want []byte
	}{
		{&meta.DeleteDevice{Header: meta.Header{HashSlot: 1}, UID: "u", Flag: 7}, []byte{1, 11, 0, 1, 0, 0, 1, 'u', 7}},
		{&meta.AddSystemUID{Header: meta.Header{HashSlot: 2}, UID: "b"}, []byte{1, 12, 0, 2, 0, 0, 1, 'b'}},
		{&meta.DeletePlugin{Header: meta.Header{HashSlot: 3}, UID: "u", PluginNo: "p"}, []byte{1, 15, 0, 3, 0, 0, 1, 'u', 1, 'p'}},
		{&meta.DeleteChannel{Header: meta.Header{HashSlot: 4}, ChannelType: 2, ChannelID: "c"}, []byte{1, 22, 0, 4, 0, 0, 2, 1, 'c'}},
		{&meta.AddChannelMembers{Header: meta.Header{HashSlot: 5}, ChannelMembers: meta.ChannelMembers{List: meta.ListDenylist, ChannelType: 1, ChannelID: "c", UIDs: []string{"a", "b"}}},
			[]byte{1, 23, 0, 5, 0, 0, 2, 1, 1, 'c', 2, 1, 'a', 1, 'b'}},
	} {
		if got := mustEncode(tc.c); !bytes.Equal(got, tc.want) {
			t.Errorf("EncodeCommand(%T) = % x, want % x", tc.c, got, tc.want)
		}
	}
}

func TestResourceCommandsRejectCutsAndTrailingBytes(t *testing.T) {
	for i, c := range resourceCommands() {
		enc := mustEncode(c)
		for cut := range len(enc) {
			if len(enc) > 4096 && cut > 1024 && cut < len(enc)-1024 && cut%997 != 0 {
				continue // the big samples: every boundary is near an end
			}
			_, err := meta.DecodeCommand(enc[:cut:cut])
			wantMalformed(t, fmt.Sprintf("sample %d (%T) cut %d/%d", i, c, cut, len(enc)), err)
		}
		_, err := meta.DecodeCommand(cat(enc, []byte{0}))
		wantMalformed(t, fmt.Sprintf("sample %d + trailing byte", i), err)
	}
}

func TestResourceCommandsRejectBadFields(t *testing.T) {
	over := func(n int) string { return strings.Repeat("x", n+1) }
	tooMany := make([]string, meta.MaxListUIDs+1)
	for i := range tooMany {
		tooMany[i] = "u"
	}
	for name, c := range map[string]meta.Command{
		"device uid":      &meta.PutDevice{UID: over(meta.MaxKeyBytes)},
		"device token":    &meta.PutDevice{UID: "u", Token: over(meta.MaxDeviceTokenBytes)},
		"del device uid":  &meta.DeleteDevice{UID: over(meta.MaxKeyBytes)},
		"system uid":      &meta.AddSystemUID{UID: over(meta.MaxKeyBytes)},
		"rm system uid":   &meta.RemoveSystemUID{UID: over(meta.MaxKeyBytes)},
		"plugin no":       &meta.PutPlugin{UID: "u", PluginNo: over(meta.MaxPluginNoBytes)},
		"plugin config":   &meta.PutPlugin{UID: "u", PluginNo: "p", Config: over(meta.MaxPluginConfigBytes)},
		"del plugin no":   &meta.DeletePlugin{UID: "u", PluginNo: over(meta.MaxPluginNoBytes)},
		"channel id":      &meta.CreateChannel{Channel: meta.ChannelInfo{Type: 1, ID: over(meta.MaxKeyBytes)}},
		"channel extra":   &meta.PutChannel{Channel: meta.ChannelInfo{Type: 1, ID: "c", Extra: over(meta.MaxStringBytes)}},
		"del channel id":  &meta.DeleteChannel{ChannelType: 1, ChannelID: over(meta.MaxKeyBytes)},
		"too many uids":   &meta.AddChannelMembers{ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 1, ChannelID: "c", UIDs: tooMany}},
		"member uid":      &meta.RemoveChannelMembers{ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 1, ChannelID: "c", UIDs: []string{over(meta.MaxKeyBytes)}}},
		"list kind 0":     &meta.AddChannelMembers{ChannelMembers: meta.ChannelMembers{List: 0, ChannelType: 1, ChannelID: "c", UIDs: []string{"a"}}},
		"list kind 4":     &meta.RemoveChannelMembers{ChannelMembers: meta.ChannelMembers{List: 4, ChannelType: 1, ChannelID: "c"}},
		"del member kind": &meta.DeleteChannelMember{List: 0xFF, ChannelType: 1, ChannelID: "c", UID: "u"},
		"del member uid":  &meta.DeleteChannelMember{List: meta.ListDenylist, ChannelType: 1, ChannelID: "c", UID: over(meta.MaxKeyBytes)},
	} {
		wantRefused(t, name, c)
	}
	// A bool that is neither 0 nor 1.
	enc := mustEncode(&meta.PutChannel{Channel: meta.ChannelInfo{Type: 1, ID: "c"}})
	b := bytes.Clone(enc)
	b[len(b)-6] = 2 // the "ban" byte: five bools and an empty extra follow the id
	_, err := meta.DecodeCommand(b)
	wantMalformed(t, "bool 2", err)
	// A huge uid count is refused before anything is allocated.
	_, err = meta.DecodeCommand([]byte{1, byte(meta.OpAddChannelMembers), 0, 0, 0, 0, 1, 1, 1, 'c', 0xFF, 0xFF, 0xFF, 0xFF, 0x0F})
	wantMalformed(t, "huge uid count", err)
}

func TestResourceFingerprints(t *testing.T) {
	m := meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 1, ChannelID: "c", UIDs: []string{"a"}}
	pairs := [][2]meta.Command{
		{&meta.AddChannelMembers{ChannelMembers: m}, &meta.RemoveChannelMembers{ChannelMembers: m}},
		{&meta.AddChannelMembers{ChannelMembers: m}, &meta.AddChannelMembers{ChannelMembers: meta.ChannelMembers{List: meta.ListDenylist, ChannelType: 1, ChannelID: "c", UIDs: []string{"a"}}}},
		{&meta.AddChannelMembers{ChannelMembers: m}, &meta.AddChannelMembers{ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 1, ChannelID: "c", UIDs: []string{"a", "a"}}}},
		{&meta.PutDevice{UID: "u", Flag: 1, Token: "t"}, &meta.PutDevice{UID: "u", Flag: 2, Token: "t"}},
		{&meta.PutDevice{UID: "u", Flag: 1, Token: "t"}, &meta.PutDevice{UID: "u", Flag: 1, Token: "t", Level: 1}},
		{&meta.PutPlugin{UID: "u", PluginNo: "p", Config: "1"}, &meta.PutPlugin{UID: "u", PluginNo: "p", Config: "2"}},
		{&meta.CreateChannel{Channel: meta.ChannelInfo{Type: 1, ID: "c"}}, &meta.PutChannel{Channel: meta.ChannelInfo{Type: 1, ID: "c"}}},
		{&meta.PutChannel{Channel: meta.ChannelInfo{Type: 1, ID: "c"}}, &meta.PutChannel{Channel: meta.ChannelInfo{Type: 1, ID: "c", Large: true}}},
		{&meta.AddSystemUID{UID: "u"}, &meta.RemoveSystemUID{UID: "u"}},
	}
	for i, p := range pairs {
		if meta.Fingerprint(p[0]) == meta.Fingerprint(p[1]) {
			t.Errorf("pair %d (%T, %T): different commands share a fingerprint", i, p[0], p[1])
		}
	}
}

// entityCodec is one entity type's encoder and decoder, type-erased.
type entityCodec struct {
	name string
	enc  func(any) []byte
	dec  func([]byte) (any, error)
}

func codecOf[T any](name string, enc func(*T) []byte, dec func([]byte) (*T, error)) entityCodec {
	return entityCodec{name,
		func(v any) []byte { return enc(v.(*T)) },
		func(b []byte) (any, error) { return dec(b) }}
}

var (
	deviceCodec    = codecOf("device", meta.EncodeDevice, meta.DecodeDevice)
	systemUIDCodec = codecOf("system uid", meta.EncodeSystemUID, meta.DecodeSystemUID)
	pluginCodec    = codecOf("plugin", meta.EncodePluginBinding, meta.DecodePluginBinding)
	channelCodec   = codecOf("channel", meta.EncodeChannel, meta.DecodeChannel)
	memberCodec    = codecOf("member", meta.EncodeChannelMember, meta.DecodeChannelMember)
	changeCodec    = codecOf("list change", meta.EncodeListChange, meta.DecodeListChange)
)

func resourceEntities() []struct {
	c entityCodec
	v any
} {
	return []struct {
		c entityCodec
		v any
	}{
		{deviceCodec, &meta.Device{}},
		{deviceCodec, &meta.Device{UID: "u", Flag: 255, Token: strings.Repeat("t", meta.MaxDeviceTokenBytes), Level: 3,
			CreatedAtMs: math.MinInt64, UpdatedAtMs: math.MaxInt64, Revision: math.MaxUint64}},
		{systemUIDCodec, &meta.SystemUID{UID: "bot", CreatedAtMs: 1, Revision: 2}},
		{pluginCodec, &meta.PluginBinding{UID: "u", PluginNo: "p", Config: `{"a":1}`, CreatedAtMs: -5, UpdatedAtMs: 5, Revision: 300}},
		{channelCodec, &meta.Channel{}},
		{channelCodec, &meta.Channel{ChannelInfo: meta.ChannelInfo{Type: 255, ID: "c", Ban: true, Disband: true, SendBan: true, AllowStranger: true, Large: true, Extra: "{}"},
			SubscriberCount: 1 << 40, DenylistCount: 2, AllowlistCount: 3, SubscriberVersion: 4, PendingProjection: 5,
			CreatedAtMs: 6, UpdatedAtMs: 7, Revision: math.MaxUint64}},
		{memberCodec, &meta.ChannelMember{UID: "用户", AddedAtMs: 1_700_000_000_000}},
		{changeCodec, &meta.ListChange{Changed: 1000, Count: math.MaxUint64}},
	}
}

func TestResourceEntitiesRoundTripAndRejectCuts(t *testing.T) {
	for i, e := range resourceEntities() {
		enc := e.c.enc(e.v)
		got, err := e.c.dec(enc)
		if err != nil || !reflect.DeepEqual(got, e.v) {
			t.Fatalf("%s %d: round trip %+v, %v", e.c.name, i, got, err)
		}
		// Fields are appended, never changed: bytes after the known fields are ignored.
		if got, err := e.c.dec(cat(enc, []byte{1, 2, 3})); err != nil || !reflect.DeepEqual(got, e.v) {
			t.Fatalf("%s %d with appended bytes: %+v, %v", e.c.name, i, got, err)
		}
		for _, v := range []byte{0, 2, 0xFF} {
			b := bytes.Clone(enc)
			b[0] = v
			_, err := e.c.dec(b)
			wantMalformed(t, fmt.Sprintf("%s %d version %d", e.c.name, i, v), err)
		}
		for cut := range len(enc) {
			_, err := e.c.dec(enc[:cut:cut])
			wantMalformed(t, fmt.Sprintf("%s %d cut %d/%d", e.c.name, i, cut, len(enc)), err)
		}
	}
	over := func(n int) string { return strings.Repeat("x", n+1) }
	for name, b := range map[string][]byte{
		"device token":   deviceCodec.enc(&meta.Device{Token: over(meta.MaxDeviceTokenBytes)}),
		"device uid":     deviceCodec.enc(&meta.Device{UID: over(meta.MaxKeyBytes)}),
		"plugin no":      pluginCodec.enc(&meta.PluginBinding{PluginNo: over(meta.MaxPluginNoBytes)}),
		"plugin config":  pluginCodec.enc(&meta.PluginBinding{Config: over(meta.MaxPluginConfigBytes)}),
		"channel id":     channelCodec.enc(&meta.Channel{ChannelInfo: meta.ChannelInfo{ID: over(meta.MaxKeyBytes)}}),
		"channel extra":  channelCodec.enc(&meta.Channel{ChannelInfo: meta.ChannelInfo{Extra: over(meta.MaxStringBytes)}}),
		"system uid":     systemUIDCodec.enc(&meta.SystemUID{UID: over(meta.MaxKeyBytes)}),
		"member uid":     memberCodec.enc(&meta.ChannelMember{UID: over(meta.MaxKeyBytes)}),
		"huge uid len":   {1, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F},
		"channel bool 2": append([]byte{1, 1, 1, 'c', 2}, make([]byte, 20)...),
	} {
		var err error
		switch {
		case strings.HasPrefix(name, "device"):
			_, err = deviceCodec.dec(b)
		case strings.HasPrefix(name, "plugin"):
			_, err = pluginCodec.dec(b)
		case strings.HasPrefix(name, "channel"):
			_, err = channelCodec.dec(b)
		case strings.HasPrefix(name, "system"), strings.HasPrefix(name, "huge"):
			_, err = systemUIDCodec.dec(b)
		default:
			_, err = memberCodec.dec(b)
		}
		wantMalformed(t, "oversize "+name, err)
	}
}

func resourceQueries() []meta.Query {
	return []meta.Query{
		&meta.GetDevice{HashSlot: 1, UID: "u", Flag: 255},
		&meta.ListDevices{HashSlot: 2, UID: "u", From: 256, Limit: 1000},
		&meta.ScanSystemUIDs{HashSlot: 3, AfterUID: "bot", Limit: 1},
		&meta.ListUserPlugins{HashSlot: 4, UID: "u", AfterPlugin: "p", Limit: 2},
		&meta.ScanPluginUsers{PluginNo: "p", FromSlot: 5, ToSlot: 255, AfterUID: "u", Limit: 3},
		&meta.GetChannel{HashSlot: 6, ChannelType: 1, ChannelID: "c"},
		&meta.ScanChannelList{HashSlot: 7, List: meta.ListAllowlist, ChannelType: 2, ChannelID: "c", AfterUID: "a", Limit: 4},
		&meta.GetChannelMember{HashSlot: 255, List: meta.ListDenylist, ChannelType: 3, ChannelID: "c", UID: "u"},
	}
}

func TestResourceQueriesRoundTripAndRejectCuts(t *testing.T) {
	for _, q := range resourceQueries() {
		b := meta.EncodeQuery(q)
		got, err := meta.DecodeQuery(b)
		if err != nil || !reflect.DeepEqual(got, q) {
			t.Fatalf("%T: got %+v, %v", q, got, err)
		}
		for cut := range len(b) {
			_, err := meta.DecodeQuery(b[:cut:cut])
			wantMalformed(t, fmt.Sprintf("%T cut %d", q, cut), err)
		}
		_, err = meta.DecodeQuery(cat(b, []byte{0}))
		wantMalformed(t, fmt.Sprintf("%T trailing byte", q), err)
	}
	for name, q := range map[string]meta.Query{
		"device from 257":  &meta.ListDevices{UID: "u", From: 257},
		"list kind 0":      &meta.ScanChannelList{List: 0, ChannelType: 1, ChannelID: "c"},
		"member list kind": &meta.GetChannelMember{List: 9, ChannelType: 1, ChannelID: "c"},
		"huge limit":       &meta.ScanSystemUIDs{Limit: 1 << 30},
		"slot 256":         &meta.GetChannel{HashSlot: 256, ChannelType: 1, ChannelID: "c"},
		"from slot 300":    &meta.ScanPluginUsers{PluginNo: "p", FromSlot: 300, ToSlot: 300},
		"long plugin":      &meta.ListUserPlugins{UID: "u", AfterPlugin: strings.Repeat("p", meta.MaxPluginNoBytes+1)},
	} {
		_, err := meta.DecodeQuery(meta.EncodeQuery(q))
		if err == nil {
			t.Errorf("%s decoded", name)
		}
	}
}

func TestResourceAnswersRoundTripAndRejectCuts(t *testing.T) {
	dev := &meta.Device{UID: "u", Flag: 1, Token: "t", Revision: 9}
	for _, a := range []any{
		dev,
		&meta.DevicePage{Devices: []*meta.Device{dev, {UID: "u", Flag: 2}}, More: true},
		&meta.DevicePage{}, // an empty list decodes as nil, as the state machine builds it
		&meta.SystemUIDPage{UIDs: []*meta.SystemUID{{UID: "a", CreatedAtMs: 1, Revision: 2}}, More: true},
		&meta.PluginPage{Bindings: []*meta.PluginBinding{{UID: "u", PluginNo: "p", Config: "{}"}}},
		&meta.Channel{ChannelInfo: meta.ChannelInfo{Type: 1, ID: "c"}, SubscriberCount: 3},
		&meta.ChannelMemberPage{Members: []*meta.ChannelMember{{UID: "a", AddedAtMs: 1}, {UID: "b"}}, More: true},
		&meta.ChannelMember{UID: "a", AddedAtMs: 5},
	} {
		b, err := meta.EncodeAnswer(a)
		if err != nil {
			t.Fatalf("%T: %v", a, err)
		}
		got, err := meta.DecodeAnswer(b)
		if err != nil || !reflect.DeepEqual(got, a) {
			t.Fatalf("%T: got %+v, %v", a, got, err)
		}
		for cut := range len(b) {
			if _, err := meta.DecodeAnswer(b[:cut:cut]); err == nil {
				t.Fatalf("%T cut at %d decoded", a, cut)
			}
		}
	}
	// A typed nil answer ("user / channel absent") travels as nil.
	for _, a := range []any{(*meta.DevicePage)(nil), (*meta.PluginPage)(nil), (*meta.ChannelMemberPage)(nil), (*meta.Channel)(nil), (*meta.ChannelMember)(nil), (*meta.Device)(nil)} {
		b, err := meta.EncodeAnswer(a)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := meta.DecodeAnswer(b); err != nil || got != nil {
			t.Fatalf("%T nil: %v, %v", a, got, err)
		}
	}
	// A page whose item does not decode is malformed.
	b, _ := meta.EncodeAnswer(&meta.ChannelMemberPage{Members: []*meta.ChannelMember{{UID: "a"}}})
	bad := bytes.Clone(b)
	bad[bytes.IndexByte(bad, 'a')-2] = 7 // the member's version byte
	_, err := meta.DecodeAnswer(bad)
	wantMalformed(t, "page with a bad item", err)
}

func TestChannelListNames(t *testing.T) {
	for l, want := range map[meta.ChannelList]struct {
		name  string
		table meta.Table
	}{
		meta.ListSubscribers: {"subscribers", meta.TableSubscriber},
		meta.ListDenylist:    {"denylist", meta.TableDenylist},
		meta.ListAllowlist:   {"allowlist", meta.TableAllowlist},
	} {
		if !l.Valid() || l.String() != want.name || l.Table() != want.table || (&meta.Channel{}).Count(l) == nil {
			t.Errorf("list %d: %v %q %d", l, l.Valid(), l.String(), l.Table())
		}
	}
	for _, l := range []meta.ChannelList{0, 4, 0xFF} {
		if l.Valid() || l.Table() != 0 || (&meta.Channel{}).Count(l) != nil {
			t.Errorf("list %d is valid", l)
		}
	}
}
