package meta_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// routed sets the command's hash slot to its route key's, as httpapi does.
func routed[C meta.Command](c C) C {
	c.Head().HashSlot = slotstore.HashSlotOfString(c.RouteKey())
	return c
}

func binaryValue(n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(i*7 + 3)
	}
	return v
}

// sampleCommands covers every command type, every condition kind and the
// edges of every field (empty, at the decoder's limit, extreme integers,
// non-ASCII and NUL bytes). No empty non-nil Value: the codec decodes an
// empty value as nil (see TestEmptyValueDecodesAsNil).
func sampleCommands() []meta.Command {
	return []meta.Command{
		routed(&meta.CreateUser{
			Header: meta.Header{TimeMs: 1_700_000_000_000, IdempotencyKey: "idem-1"},
			User:   meta.User{UID: "user-1", Name: "Alice", Avatar: "https://cdn/a.png", Extra: `{"k":1}`},
		}),
		routed(&meta.CreateUser{User: meta.User{UID: "u"}}),
		routed(&meta.PutUser{
			Header: meta.Header{TimeMs: -1, IdempotencyKey: strings.Repeat("i", meta.MaxIdempotencyKeyBytes)},
			User:   meta.User{UID: "用户-1", Name: "名字", Avatar: "", Extra: "\x00\xff\x00"},
		}),
		routed(&meta.PutUser{
			Header: meta.Header{TimeMs: math.MaxInt64},
			User: meta.User{UID: strings.Repeat("u", meta.MaxKeyBytes), Name: strings.Repeat("n", meta.MaxStringBytes),
				Avatar: "a", Extra: strings.Repeat("e", 300)},
		}),
		routed(&meta.DeleteUser{Header: meta.Header{TimeMs: math.MinInt64, IdempotencyKey: "d"}, UID: "user-2"}),
		routed(&meta.DeleteUser{UID: ""}),
		routed(&meta.PutKV{
			Header: meta.Header{TimeMs: 42, IdempotencyKey: "kv-1"},
			Key:    "channel:42", Value: binaryValue(200), Cond: meta.Cond{Kind: meta.CondIfRevision, Revision: math.MaxUint64},
		}),
		routed(&meta.PutKV{Key: "k-nil", Cond: meta.Cond{Kind: meta.CondIfAbsent}}),
		routed(&meta.PutKV{Key: "k-big", Value: binaryValue(meta.MaxValueBytes), Cond: meta.Cond{Kind: meta.CondIfExists}}),
		routed(&meta.PutKV{Key: strings.Repeat("k", meta.MaxKeyBytes), Value: []byte{0}, Cond: meta.Cond{Kind: meta.CondNone, Revision: 9}}),
		routed(&meta.DeleteKV{Header: meta.Header{TimeMs: 1}, Key: "channel:7"}),
		routed(&meta.DeleteKV{Key: "channel:8", Cond: meta.Cond{Kind: meta.CondIfRevision, Revision: 128}}),
		&meta.Noop{Header: meta.Header{HashSlot: 255, TimeMs: 5}},
		&meta.Noop{},
	}
}

// smallCommands are the samples without the 64 KiB ones, for loops that
// decode every prefix of every encoding.
func smallCommands() []meta.Command {
	var out []meta.Command
	for _, c := range sampleCommands() {
		if len(mustEncode(c)) < 4096 {
			out = append(out, c)
		}
	}
	return out
}

func sampleUsers() []*meta.User {
	return []*meta.User{
		{},
		{UID: "user-1", Name: "Alice", Avatar: "https://cdn/a.png", Extra: `{"k":1}`,
			CreatedAtMs: 1_700_000_000_000, UpdatedAtMs: 1_700_000_000_001, Revision: 17},
		{UID: "用户", Name: "\x00", CreatedAtMs: math.MinInt64, UpdatedAtMs: math.MaxInt64, Revision: math.MaxUint64},
		{UID: strings.Repeat("u", meta.MaxKeyBytes), Extra: strings.Repeat("e", meta.MaxStringBytes), CreatedAtMs: -1},
	}
}

func sampleKVs() []*meta.KV {
	return []*meta.KV{
		{Key: "k"},
		{Key: "channel:42", Value: binaryValue(200), Revision: 9, CreateRevision: 3, UpdatedAtMs: 1_700_000_000_000},
		{Key: strings.Repeat("k", meta.MaxKeyBytes), Value: binaryValue(meta.MaxValueBytes),
			Revision: math.MaxUint64, CreateRevision: math.MaxUint64, UpdatedAtMs: math.MinInt64},
		{Key: "", Value: []byte{0xFF}, UpdatedAtMs: -1},
	}
}

func sampleResults() []meta.Result {
	return []meta.Result{
		{Revision: 1, Value: meta.EncodeUser(&meta.User{UID: "u", Revision: 1})},
		{Code: slotstore.CodeNotFound, Message: `user "x" not found`},
		{Code: slotstore.CodeFailedPrecondition, Message: "revision 3 != 4", Revision: 4},
		{Revision: math.MaxUint64, Replayed: true},
		{Code: slotstore.Code(strings.Repeat("c", 64)), Message: "最长的代码"},
		{},
	}
}

func mustDecodeCommand(t testing.TB, b []byte) meta.Command {
	t.Helper()
	c, err := meta.DecodeCommand(b)
	if err != nil {
		t.Fatalf("DecodeCommand: %v", err)
	}
	return c
}

// wantMalformed fails unless err is a decoding error wrapping ErrMalformed.
func wantMalformed(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: decoded without error", what)
	}
	if !errors.Is(err, meta.ErrMalformed) {
		t.Fatalf("%s: error %v does not wrap ErrMalformed", what, err)
	}
}

// cat concatenates byte slices into a new one.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// mustEncode encodes a command the test knows is within every codec limit.
func mustEncode(c meta.Command) []byte {
	b, err := meta.EncodeCommand(c)
	if err != nil {
		panic(fmt.Sprintf("EncodeCommand(%T): %v", c, err))
	}
	return b
}

// wantRefused fails unless both directions refuse c: EncodeCommand with an
// error wrapping ErrLimit, and DecodeCommand, given the bytes an encoder
// that did not check would write, with ErrMalformed.
func wantRefused(t testing.TB, what string, c meta.Command) {
	t.Helper()
	if b, err := meta.EncodeCommand(c); err == nil || b != nil || !errors.Is(err, meta.ErrLimit) {
		t.Fatalf("%s: EncodeCommand gave %d bytes, %v; want ErrLimit", what, len(b), err)
	}
	_, err := meta.DecodeCommand(meta.EncodeCommandUnchecked(c))
	wantMalformed(t, what, err)
}
