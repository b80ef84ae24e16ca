package meta_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func TestCommandRoundTrip(t *testing.T) {
	seen := map[meta.Op]bool{}
	for i, c := range sampleCommands() {
		enc := mustEncode(c)
		got := mustDecodeCommand(t, enc)
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("sample %d (%T): round trip\n got %+v\nwant %+v", i, c, got, c)
		}
		if got.Op() != c.Op() || got.RouteKey() != c.RouteKey() || *got.Head() != *c.Head() {
			t.Fatalf("sample %d: op/route key/header changed", i)
		}
		if enc2 := mustEncode(got); !bytes.Equal(enc, enc2) {
			t.Fatalf("sample %d: re-encoding differs", i)
		}
		seen[c.Op()] = true
	}
	for _, op := range []meta.Op{meta.OpCreateUser, meta.OpPutUser, meta.OpDeleteUser, meta.OpPutKV, meta.OpDeleteKV, meta.OpNoop} {
		if !seen[op] {
			t.Errorf("no sample of op %d", op)
		}
	}
}

func TestCommandOpsAndRouteKeys(t *testing.T) {
	u := meta.User{UID: "user-9"}
	for _, tc := range []struct {
		c   meta.Command
		op  meta.Op
		key string
	}{
		{&meta.CreateUser{User: u}, 1, "user-9"},
		{&meta.PutUser{User: u}, 2, "user-9"},
		{&meta.DeleteUser{UID: "user-8"}, 3, "user-8"},
		{&meta.PutKV{Key: "k1"}, 4, "k1"},
		{&meta.DeleteKV{Key: "k2"}, 5, "k2"},
		{&meta.Noop{}, 6, ""},
	} {
		if tc.c.Op() != tc.op || tc.c.RouteKey() != tc.key {
			t.Errorf("%T: op %d key %q, want %d %q", tc.c, tc.c.Op(), tc.c.RouteKey(), tc.op, tc.key)
		}
		// The op byte on the wire is the op value: ops are never renumbered.
		if b := mustEncode(tc.c); b[0] != 1 || meta.Op(b[1]) != tc.op {
			t.Errorf("%T encodes as version %d op %d", tc.c, b[0], b[1])
		}
	}
}

// TestCommandGoldenEncoding pins the wire format: encoded commands live in
// every replica's Raft log forever, so any change here is a format break.
func TestCommandGoldenEncoding(t *testing.T) {
	for _, tc := range []struct {
		c    meta.Command
		want []byte
	}{
		{
			&meta.DeleteUser{Header: meta.Header{HashSlot: 0x00F1, TimeMs: 1, IdempotencyKey: "k"}, UID: "u"},
			[]byte{1, 3, 0x00, 0xF1, 0x02, 1, 'k', 1, 'u'},
		},
		{
			&meta.Noop{Header: meta.Header{HashSlot: 255, TimeMs: -1}},
			[]byte{1, 6, 0, 255, 0x01, 0},
		},
		{
			&meta.PutKV{Header: meta.Header{HashSlot: 7}, Key: "a", Value: []byte{0xAB}, Cond: meta.Cond{Kind: meta.CondIfRevision, Revision: 300}},
			[]byte{1, 4, 0, 7, 0, 0, 1, 'a', 1, 0xAB, 1, 0xAC, 0x02},
		},
		{
			&meta.CreateUser{Header: meta.Header{HashSlot: 1, TimeMs: 64}, User: meta.User{UID: "u", Name: "n", Extra: "e"}},
			[]byte{1, 1, 0, 1, 0x80, 0x01, 0, 1, 'u', 1, 'n', 0, 1, 'e'},
		},
		{
			&meta.DeleteKV{Header: meta.Header{HashSlot: 0}, Key: "", Cond: meta.Cond{Kind: meta.CondIfExists}},
			[]byte{1, 5, 0, 0, 0, 0, 0, 3, 0},
		},
	} {
		got := mustEncode(tc.c)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("EncodeCommand(%T) = % x\n                    want % x", tc.c, got, tc.want)
		}
		if c := mustDecodeCommand(t, tc.want); !reflect.DeepEqual(c, tc.c) {
			t.Errorf("DecodeCommand(% x) = %+v, want %+v", tc.want, c, tc.c)
		}
	}
}

// A user's server-assigned fields are not part of a command: apply sets them
// from the header's TimeMs and the group revision.
func TestUserCommandCarriesOnlyClientFields(t *testing.T) {
	c := &meta.PutUser{User: meta.User{UID: "u", Name: "n", CreatedAtMs: 5, UpdatedAtMs: 6, Revision: 7}}
	got := mustDecodeCommand(t, mustEncode(c)).(*meta.PutUser)
	want := meta.User{UID: "u", Name: "n"}
	if got.User != want {
		t.Fatalf("decoded user %+v, want %+v", got.User, want)
	}
}

func TestEmptyValueDecodesAsNil(t *testing.T) {
	a := mustEncode(&meta.PutKV{Key: "k", Value: []byte{}})
	b := mustEncode(&meta.PutKV{Key: "k"})
	if !bytes.Equal(a, b) {
		t.Fatal("empty and nil values encode differently")
	}
	if v := mustDecodeCommand(t, a).(*meta.PutKV).Value; v != nil {
		t.Fatalf("empty value decodes as %#v, want nil", v)
	}
}

// Decoded commands must not alias the input: the caller (the FSM, the
// proposer) may reuse its buffer after decoding.
func TestDecodeCommandDoesNotAliasInput(t *testing.T) {
	for i, c := range sampleCommands() {
		enc := mustEncode(c)
		buf := bytes.Clone(enc)
		got := mustDecodeCommand(t, buf)
		for j := range buf {
			buf[j] = 0xEE
		}
		if !bytes.Equal(mustEncode(got), enc) {
			t.Fatalf("sample %d (%T): decoded command changed when the input buffer was overwritten", i, c)
		}
	}
}

func TestDecodeCommandRejectsVersionAndOp(t *testing.T) {
	good := mustEncode(&meta.DeleteUser{Header: meta.Header{HashSlot: 3}, UID: "u"})
	for _, v := range []byte{0, 2, 0xFF} {
		b := bytes.Clone(good)
		b[0] = v
		_, err := meta.DecodeCommand(b)
		wantMalformed(t, fmt.Sprintf("version %d", v), err)
	}
	for _, op := range []byte{0, 7, 0x80, 0xFF} {
		b := bytes.Clone(good)
		b[1] = op
		_, err := meta.DecodeCommand(b)
		wantMalformed(t, fmt.Sprintf("op %d", op), err)
	}
	// Only a version byte, or a bare version + op.
	for _, b := range [][]byte{nil, {}, {1}, {1, 3}, {1, 6}, {1, 6, 0}, {1, 6, 0, 0}, {1, 6, 0, 0, 0}} {
		_, err := meta.DecodeCommand(b)
		wantMalformed(t, fmt.Sprintf("% x", b), err)
	}
	if c, err := meta.DecodeCommand([]byte{1, 6, 0, 0, 0, 0}); err != nil || c.Op() != meta.OpNoop {
		t.Fatalf("minimal noop: %v, %v", c, err)
	}
}

func TestDecodeCommandRejectsEveryTruncation(t *testing.T) {
	for i, c := range sampleCommands() {
		enc := mustEncode(c)
		cuts := make([]int, len(enc))
		for cut := range cuts {
			cuts[cut] = cut
		}
		if len(enc) > 4096 {
			// The 64 KiB samples: every cut in the first and last 1 KiB
			// (all field boundaries) and a stride through the big field.
			cuts = cuts[:0]
			for cut := range len(enc) {
				if cut < 1024 || cut >= len(enc)-1024 || cut%997 == 0 {
					cuts = append(cuts, cut)
				}
			}
		}
		for _, cut := range cuts {
			got, err := meta.DecodeCommand(enc[:cut:cut])
			if err == nil {
				t.Fatalf("sample %d (%T): prefix of %d/%d bytes decoded as %+v", i, c, cut, len(enc), got)
			}
			wantMalformed(t, fmt.Sprintf("sample %d cut %d", i, cut), err)
		}
	}
}

func TestDecodeCommandRejectsTrailingBytes(t *testing.T) {
	for i, c := range smallCommands() {
		enc := mustEncode(c)
		for _, extra := range [][]byte{{0}, {1}, {0xFF, 0xFF}, enc} {
			_, err := meta.DecodeCommand(cat(enc, extra))
			wantMalformed(t, fmt.Sprintf("sample %d + % x", i, extra), err)
		}
	}
}

func TestDecodeCommandRejectsHashSlotOutOfRange(t *testing.T) {
	for _, c := range smallCommands() {
		enc := mustEncode(c)
		for _, hs := range []uint16{256, 257, 0x1000, 0xFFFF} {
			b := bytes.Clone(enc)
			binary.BigEndian.PutUint16(b[2:], hs)
			_, err := meta.DecodeCommand(b)
			wantMalformed(t, fmt.Sprintf("%T hash slot %d", c, hs), err)
		}
	}
	for _, hs := range []slotstore.HashSlot{0, 255} {
		c := mustDecodeCommand(t, mustEncode(&meta.Noop{Header: meta.Header{HashSlot: hs}}))
		if c.Head().HashSlot != hs {
			t.Fatalf("hash slot %d decoded as %d", hs, c.Head().HashSlot)
		}
	}
}

func TestDecodeCommandRejectsBadCondition(t *testing.T) {
	for _, c := range []meta.Command{&meta.PutKV{Key: "k", Value: []byte("v")}, &meta.DeleteKV{Key: "k"}} {
		enc := mustEncode(c)
		condAt := len(enc) - 2 // kind byte, then revision 0 (one byte)
		for _, kind := range []byte{4, 5, 0x7F, 0xFF} {
			b := bytes.Clone(enc)
			b[condAt] = kind
			_, err := meta.DecodeCommand(b)
			wantMalformed(t, fmt.Sprintf("%T cond kind %d", c, kind), err)
		}
		for kind := range byte(4) {
			b := bytes.Clone(enc)
			b[condAt] = kind
			if _, err := meta.DecodeCommand(b); err != nil {
				t.Fatalf("%T cond kind %d rejected: %v", c, kind, err)
			}
		}
	}
}

// Every length-prefixed field is checked against its limit: one byte over
// is rejected, the limit itself is accepted (see sampleCommands).
func TestDecodeCommandRejectsOversizeFields(t *testing.T) {
	over := func(n int) string { return strings.Repeat("x", n+1) }
	for name, c := range map[string]meta.Command{
		"idempotency key": &meta.Noop{Header: meta.Header{IdempotencyKey: over(meta.MaxIdempotencyKeyBytes)}},
		"create uid":      &meta.CreateUser{User: meta.User{UID: over(meta.MaxKeyBytes)}},
		"put uid":         &meta.PutUser{User: meta.User{UID: over(meta.MaxKeyBytes)}},
		"name":            &meta.PutUser{User: meta.User{UID: "u", Name: over(meta.MaxStringBytes)}},
		"avatar":          &meta.CreateUser{User: meta.User{UID: "u", Avatar: over(meta.MaxStringBytes)}},
		"extra":           &meta.PutUser{User: meta.User{UID: "u", Extra: over(meta.MaxStringBytes)}},
		"delete uid":      &meta.DeleteUser{UID: over(meta.MaxKeyBytes)},
		"kv key":          &meta.PutKV{Key: over(meta.MaxKeyBytes)},
		"kv value":        &meta.PutKV{Key: "k", Value: []byte(over(meta.MaxValueBytes))},
		"delete kv key":   &meta.DeleteKV{Key: over(meta.MaxKeyBytes)},
	} {
		wantRefused(t, name, c)
	}
}

// Hand-made length prefixes that are absurd, overflow, or point past the end
// must fail cleanly, without allocating what they claim.
func TestDecodeCommandRejectsBadLengthPrefixes(t *testing.T) {
	hdr := []byte{1, 3, 0, 9, 0, 0} // DeleteUser, slot 9, time 0, empty idempotency key
	for name, tail := range map[string][]byte{
		"1<<62":             binary.AppendUvarint(nil, 1<<62),
		"max uint64":        binary.AppendUvarint(nil, ^uint64(0)),
		"overflowing 11B":   bytes.Repeat([]byte{0xFF}, 11),
		"unterminated":      {0x80, 0x80},
		"past end":          {5, 'a', 'b'},
		"limit+1 short":     cat(binary.AppendUvarint(nil, meta.MaxKeyBytes+1), []byte("abc")),
		"2^31 past int32":   binary.AppendUvarint(nil, 1<<31),
		"2^32 wraps to 0":   cat(binary.AppendUvarint(nil, 1<<32), []byte{}),
		"2^64-1 wraps to 1": cat(binary.AppendUvarint(nil, ^uint64(0)), []byte{'a'}),
	} {
		_, err := meta.DecodeCommand(cat(hdr, tail))
		wantMalformed(t, name, err)
	}
	// The idempotency key length is checked the same way.
	_, err := meta.DecodeCommand(cat([]byte{1, 6, 0, 0, 0}, binary.AppendUvarint(nil, 1<<40)))
	wantMalformed(t, "huge idempotency key", err)
	// Time that is not a valid varint.
	_, err = meta.DecodeCommand(cat([]byte{1, 6, 0, 0}, bytes.Repeat([]byte{0xFF}, 10), []byte{1, 0}))
	wantMalformed(t, "overflowing time", err)
}

func TestFingerprint(t *testing.T) {
	for i, c := range sampleCommands() {
		fp := meta.Fingerprint(c)
		// A retry: same body, new time and a different idempotency key.
		retry := mustDecodeCommand(t, mustEncode(c))
		retry.Head().TimeMs = c.Head().TimeMs ^ 0x5555
		retry.Head().IdempotencyKey = c.Head().IdempotencyKey + "-other"
		if meta.Fingerprint(retry) != fp {
			t.Errorf("sample %d (%T): fingerprint changed with time / idempotency key", i, c)
		}
		moved := mustDecodeCommand(t, mustEncode(c))
		moved.Head().HashSlot = (c.Head().HashSlot + 1) % 256
		if meta.Fingerprint(moved) == fp {
			t.Errorf("sample %d (%T): fingerprint ignores the hash slot", i, c)
		}
	}

	user := meta.User{UID: "u", Name: "n", Avatar: "a", Extra: "e"}
	userMut := map[string]func(*meta.User){
		"uid":    func(u *meta.User) { u.UID = "v" },
		"name":   func(u *meta.User) { u.Name = "m" },
		"avatar": func(u *meta.User) { u.Avatar = "" },
		"extra":  func(u *meta.User) { u.Extra = "e2" },
		// Length prefixes keep field boundaries: "n"+"a" != "na"+"".
		"shift": func(u *meta.User) { u.Name, u.Avatar = "na", "" },
	}
	type variant struct {
		name string
		a, b meta.Command
	}
	var vs []variant
	for name, mut := range userMut {
		u2 := user
		mut(&u2)
		vs = append(vs,
			variant{"create " + name, &meta.CreateUser{User: user}, &meta.CreateUser{User: u2}},
			variant{"put " + name, &meta.PutUser{User: user}, &meta.PutUser{User: u2}})
	}
	kv := meta.PutKV{Key: "k", Value: []byte("v"), Cond: meta.Cond{Kind: meta.CondIfRevision, Revision: 3}}
	dkv := meta.DeleteKV{Key: "k", Cond: meta.Cond{Kind: meta.CondIfRevision, Revision: 3}}
	vs = append(vs,
		variant{"create vs put", &meta.CreateUser{User: user}, &meta.PutUser{User: user}},
		variant{"delete uid", &meta.DeleteUser{UID: "u"}, &meta.DeleteUser{UID: "v"}},
		variant{"delete user vs kv", &meta.DeleteUser{UID: "k"}, &meta.DeleteKV{Key: "k"}},
		variant{"noop vs delete empty", &meta.Noop{}, &meta.DeleteUser{}},
		variant{"kv key", &kv, &meta.PutKV{Key: "k2", Value: kv.Value, Cond: kv.Cond}},
		variant{"kv value", &kv, &meta.PutKV{Key: kv.Key, Value: []byte("w"), Cond: kv.Cond}},
		variant{"kv value nil", &kv, &meta.PutKV{Key: kv.Key, Cond: kv.Cond}},
		variant{"kv key/value shift", &kv, &meta.PutKV{Key: "kv", Cond: kv.Cond}},
		variant{"kv cond kind", &kv, &meta.PutKV{Key: kv.Key, Value: kv.Value, Cond: meta.Cond{Kind: meta.CondIfExists, Revision: 3}}},
		variant{"kv cond revision", &kv, &meta.PutKV{Key: kv.Key, Value: kv.Value, Cond: meta.Cond{Kind: meta.CondIfRevision, Revision: 4}}},
		variant{"put vs delete kv", &meta.PutKV{Key: "k", Cond: dkv.Cond}, &dkv},
		variant{"dkv key", &dkv, &meta.DeleteKV{Key: "j", Cond: dkv.Cond}},
		variant{"dkv cond kind", &dkv, &meta.DeleteKV{Key: "k", Cond: meta.Cond{Kind: meta.CondNone, Revision: 3}}},
		variant{"dkv cond revision", &dkv, &meta.DeleteKV{Key: "k", Cond: meta.Cond{Kind: meta.CondIfRevision}}},
	)
	for _, v := range vs {
		if meta.Fingerprint(v.a) == meta.Fingerprint(v.b) {
			t.Errorf("%s: different commands share a fingerprint", v.name)
		}
	}
}

// TestStampTimeIsEncodingWithTheTime: stamping a time on an encoded command
// gives exactly the encoding of the command with that time, for times whose
// varint is shorter, as long as, or longer than the one replaced; the input
// is left alone; bytes without a time are refused.
func TestStampTimeIsEncodingWithTheTime(t *testing.T) {
	cmds := append(sampleCommands(), routed(&meta.FenceSlot{}), routed(&meta.CreateChannelTask{ChanRef: meta.ChanRef{ChannelType: 2, ChannelID: "c"}}))
	for i, c := range cmds {
		for _, before := range []int64{0, 1_800_000_000_000, -5} {
			c.Head().TimeMs = before
			enc := mustEncode(c)
			orig := bytes.Clone(enc)
			for _, ms := range []int64{0, 63, 64, -65, 1_800_000_000_123, math.MaxInt64, math.MinInt64} {
				got, err := meta.StampTime(enc, ms)
				if err != nil {
					t.Fatalf("sample %d (%T) at %d: %v", i, c, ms, err)
				}
				c.Head().TimeMs = ms
				if want := mustEncode(c); !bytes.Equal(got, want) {
					t.Fatalf("sample %d (%T) from %d to %d:\n got %x\nwant %x", i, c, before, ms, got, want)
				}
				c.Head().TimeMs = before
				if !bytes.Equal(enc, orig) {
					t.Fatalf("sample %d: StampTime changed its input", i)
				}
			}
		}
	}
	for _, bad := range [][]byte{nil, {1, 2, 0, 0}, {1, 2, 0, 0, 0x80}} {
		if _, err := meta.StampTime(bad, 1); !errors.Is(err, meta.ErrMalformed) {
			t.Fatalf("StampTime(%x): %v, want malformed", bad, err)
		}
	}
}
