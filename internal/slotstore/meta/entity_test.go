package meta_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func TestUserRoundTrip(t *testing.T) {
	for i, u := range sampleUsers() {
		enc := meta.EncodeUser(u)
		got, err := meta.DecodeUser(enc)
		if err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
		if *got != *u {
			t.Fatalf("user %d: round trip\n got %+v\nwant %+v", i, got, u)
		}
		if !bytes.Equal(meta.EncodeUser(got), enc) {
			t.Fatalf("user %d: re-encoding differs", i)
		}
	}
}

func TestKVRoundTrip(t *testing.T) {
	for i, kv := range sampleKVs() {
		enc := meta.EncodeKV(kv)
		got, err := meta.DecodeKV(enc)
		if err != nil {
			t.Fatalf("kv %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, kv) {
			t.Fatalf("kv %d: round trip\n got %+v\nwant %+v", i, got, kv)
		}
		if !bytes.Equal(meta.EncodeKV(got), enc) {
			t.Fatalf("kv %d: re-encoding differs", i)
		}
	}
}

func TestEntityGoldenEncoding(t *testing.T) {
	u := &meta.User{UID: "u", Name: "n", CreatedAtMs: 1, UpdatedAtMs: -1, Revision: 300}
	if got, want := meta.EncodeUser(u), []byte{1, 1, 'u', 1, 'n', 0, 0, 2, 1, 0xAC, 0x02}; !bytes.Equal(got, want) {
		t.Errorf("EncodeUser = % x, want % x", got, want)
	}
	kv := &meta.KV{Key: "k", Value: []byte{0xAB}, Revision: 2, CreateRevision: 1, UpdatedAtMs: 64}
	if got, want := meta.EncodeKV(kv), []byte{1, 1, 'k', 1, 0xAB, 2, 1, 0x80, 0x01}; !bytes.Equal(got, want) {
		t.Errorf("EncodeKV = % x, want % x", got, want)
	}
}

func TestDecodedEntitiesDoNotAliasInput(t *testing.T) {
	kv := &meta.KV{Key: "k", Value: []byte("value"), Revision: 1}
	buf := meta.EncodeKV(kv)
	got, err := meta.DecodeKV(buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 0
	}
	if !reflect.DeepEqual(got, kv) {
		t.Fatalf("decoded kv changed with its input buffer: %+v", got)
	}
}

func TestEntityDecodeRejects(t *testing.T) {
	type decoder struct {
		name string
		enc  []byte
		dec  func([]byte) error
	}
	decUser := func(b []byte) error { _, err := meta.DecodeUser(b); return err }
	decKV := func(b []byte) error { _, err := meta.DecodeKV(b); return err }
	var cases []decoder
	for i, u := range sampleUsers() {
		cases = append(cases, decoder{fmt.Sprintf("user %d", i), meta.EncodeUser(u), decUser})
	}
	for i, kv := range sampleKVs() {
		cases = append(cases, decoder{fmt.Sprintf("kv %d", i), meta.EncodeKV(kv), decKV})
	}
	for _, c := range cases {
		for _, v := range []byte{0, 2, 0xFF} {
			b := bytes.Clone(c.enc)
			b[0] = v
			wantMalformed(t, fmt.Sprintf("%s version %d", c.name, v), c.dec(b))
		}
		if len(c.enc) > 4096 {
			// Big samples: the cut points around each field boundary suffice.
			for _, cut := range []int{0, 1, 2, 3, 4, len(c.enc) / 2, len(c.enc) - 3, len(c.enc) - 2, len(c.enc) - 1} {
				wantMalformed(t, fmt.Sprintf("%s cut %d", c.name, cut), c.dec(c.enc[:cut:cut]))
			}
			continue
		}
		for cut := range len(c.enc) {
			wantMalformed(t, fmt.Sprintf("%s cut %d/%d", c.name, cut, len(c.enc)), c.dec(c.enc[:cut:cut]))
		}
	}

	over := func(n int) string { return strings.Repeat("x", n+1) }
	for name, b := range map[string][]byte{
		"uid":    meta.EncodeUser(&meta.User{UID: over(meta.MaxKeyBytes)}),
		"name":   meta.EncodeUser(&meta.User{Name: over(meta.MaxStringBytes)}),
		"avatar": meta.EncodeUser(&meta.User{Avatar: over(meta.MaxStringBytes)}),
		"extra":  meta.EncodeUser(&meta.User{Extra: over(meta.MaxStringBytes)}),
	} {
		wantMalformed(t, "oversize user "+name, decUser(b))
	}
	wantMalformed(t, "oversize kv key", decKV(meta.EncodeKV(&meta.KV{Key: over(meta.MaxKeyBytes)})))
	wantMalformed(t, "oversize kv value", decKV(meta.EncodeKV(&meta.KV{Value: []byte(over(meta.MaxValueBytes))})))
	wantMalformed(t, "huge user uid length", decUser([]byte{1, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F}))
	wantMalformed(t, "huge kv value length", decKV([]byte{1, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}))
}

// DESIGN: entity fields are only ever appended; a decoder reads the fields it
// knows and ignores what a newer writer appended after them.
func TestEntityDecodeIgnoresAppendedFields(t *testing.T) {
	u := sampleUsers()[1]
	got, err := meta.DecodeUser(cat(meta.EncodeUser(u), []byte{3, 'n', 'e', 'w', 0x05}))
	if err != nil || *got != *u {
		t.Fatalf("DecodeUser with appended fields = %+v, %v", got, err)
	}
	kv := sampleKVs()[1]
	gotKV, err := meta.DecodeKV(cat(meta.EncodeKV(kv), []byte{0x01}))
	if err != nil || !reflect.DeepEqual(gotKV, kv) {
		t.Fatalf("DecodeKV with appended fields = %+v, %v", gotKV, err)
	}
}
