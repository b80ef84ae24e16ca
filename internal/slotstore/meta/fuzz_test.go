package meta_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Every fuzzer checks: no panic; a failure is an ErrMalformed error and no
// value; whatever decodes re-encodes to something that decodes to the same
// value, and that canonical encoding is stable.

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range smallCommands() {
		f.Add(mustEncode(c))
	}
	f.Add([]byte{})
	f.Add([]byte{1, 6, 0, 0, 0, 0})
	f.Add([]byte{1, 4, 0, 7, 0, 0, 1, 'a', 1, 0xAB, 4, 0}) // bad condition kind
	f.Add([]byte{1, 3, 1, 0, 0, 0, 1, 'u'})                // hash slot 256
	f.Add([]byte{1, 6, 0, 0, 0x80, 0x00, 0x80, 0x00})      // non-minimal varints
	f.Add(cat([]byte{1, 3, 0, 9, 0, 0}, binary.AppendUvarint(nil, 1<<62)))

	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		c, err := meta.DecodeCommand(in)
		if err != nil {
			if c != nil || !errors.Is(err, meta.ErrMalformed) {
				t.Fatalf("DecodeCommand failed with %v (command %v, want nil and ErrMalformed)", err, c)
			}
			return
		}
		if !c.Head().HashSlot.Valid() {
			t.Fatalf("decoded hash slot %d", c.Head().HashSlot)
		}
		enc := mustEncode(c)
		fp := meta.Fingerprint(c)
		_ = c.RouteKey()
		// The decoded command owns its memory.
		for i := range in {
			in[i] ^= 0xFF
		}
		if !bytes.Equal(mustEncode(c), enc) {
			t.Fatal("decoded command aliases its input")
		}
		if len(enc) > len(data) {
			t.Fatalf("canonical encoding (%d bytes) longer than the accepted input (%d)", len(enc), len(data))
		}
		c2, err := meta.DecodeCommand(enc)
		if err != nil {
			t.Fatalf("re-encoded command does not decode: %v", err)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip changed the command:\n%+v\n%+v", c, c2)
		}
		if !bytes.Equal(mustEncode(c2), enc) {
			t.Fatal("canonical encoding is not stable")
		}
		if meta.Fingerprint(c2) != fp {
			t.Fatal("fingerprint changed over a round trip")
		}
	})
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(meta.EncodeEntry(entryOf(1)))
	f.Add(meta.EncodeEntry(entryOf(5)))
	f.Add(meta.EncodeEntry([][]byte{{}, {0xFF}}))
	f.Add(meta.EncodeEntry(nil))
	f.Add([]byte{1, 3, 1, 'a', 1, 'b'})
	f.Add(cat([]byte{1}, binary.AppendUvarint(nil, meta.MaxCommandsPerEntry+1)))

	f.Fuzz(func(t *testing.T, data []byte) {
		cmds, err := meta.DecodeEntry(data)
		if err != nil {
			if cmds != nil || !errors.Is(err, meta.ErrMalformed) {
				t.Fatalf("DecodeEntry failed with %v (%d commands, want none and ErrMalformed)", err, len(cmds))
			}
			return
		}
		if len(cmds) == 0 || len(cmds) > meta.MaxCommandsPerEntry {
			t.Fatalf("decoded %d commands", len(cmds))
		}
		// The FSM decodes every framed command: that must not panic either.
		for _, c := range cmds {
			if cmd, err := meta.DecodeCommand(c); err == nil {
				_ = meta.Fingerprint(cmd)
			}
		}
		enc := meta.EncodeEntry(cmds)
		cmds2, err := meta.DecodeEntry(enc)
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if len(cmds2) != len(cmds) {
			t.Fatalf("round trip: %d commands, want %d", len(cmds2), len(cmds))
		}
		for i := range cmds {
			if !bytes.Equal(cmds[i], cmds2[i]) {
				t.Fatalf("round trip changed command %d", i)
			}
		}
		if !bytes.Equal(meta.EncodeEntry(cmds2), enc) {
			t.Fatal("canonical encoding is not stable")
		}
	})
}

func FuzzDecodeResults(f *testing.F) {
	rs := sampleResults()
	f.Add(meta.EncodeResults(rs))
	f.Add(meta.EncodeResults(nil))
	f.Add(meta.EncodeResults(rs[1:2]))
	for i := range rs {
		f.Add(meta.EncodeResult(&rs[i]))
	}
	f.Add([]byte{1, 1, 0, 0, 1, 0, 2}) // bad bool

	f.Fuzz(func(t *testing.T, data []byte) {
		// DecodeResult on the same bytes.
		if r, err := meta.DecodeResult(data); err != nil {
			if !errors.Is(err, meta.ErrMalformed) {
				t.Fatalf("DecodeResult: %v does not wrap ErrMalformed", err)
			}
		} else {
			r2, err := meta.DecodeResult(meta.EncodeResult(&r))
			if err != nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("DecodeResult round trip: %+v, %v; want %+v", r2, err, r)
			}
		}

		rs, err := meta.DecodeResults(data)
		if err != nil {
			if !errors.Is(err, meta.ErrMalformed) {
				t.Fatalf("DecodeResults: %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(rs) > meta.MaxCommandsPerEntry {
			t.Fatalf("decoded %d results", len(rs))
		}
		enc := meta.EncodeResults(rs)
		rs2, err := meta.DecodeResults(enc)
		if err != nil {
			t.Fatalf("re-encoded results do not decode: %v", err)
		}
		if !reflect.DeepEqual(rs, rs2) {
			t.Fatalf("round trip changed the results:\n%+v\n%+v", rs, rs2)
		}
		if !bytes.Equal(meta.EncodeResults(rs2), enc) {
			t.Fatal("canonical encoding is not stable")
		}
	})
}

func FuzzDecodeUser(f *testing.F) {
	for _, u := range sampleUsers() {
		if enc := meta.EncodeUser(u); len(enc) < 4096 {
			f.Add(enc)
		}
	}
	f.Add([]byte{1, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F})
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := meta.DecodeUser(data)
		if err != nil {
			if u != nil || !errors.Is(err, meta.ErrMalformed) {
				t.Fatalf("DecodeUser failed with %v (user %v, want nil and ErrMalformed)", err, u)
			}
			return
		}
		enc := meta.EncodeUser(u)
		u2, err := meta.DecodeUser(enc)
		if err != nil {
			t.Fatalf("re-encoded user does not decode: %v", err)
		}
		if *u != *u2 {
			t.Fatalf("round trip changed the user:\n%+v\n%+v", u, u2)
		}
		if !bytes.Equal(meta.EncodeUser(u2), enc) {
			t.Fatal("canonical encoding is not stable")
		}
	})
}

func FuzzDecodeKV(f *testing.F) {
	for _, kv := range sampleKVs() {
		if enc := meta.EncodeKV(kv); len(enc) < 4096 {
			f.Add(enc)
		}
	}
	f.Add([]byte{1, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01})
	f.Add([]byte{1, 1, 'k', 0, 0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		kv, err := meta.DecodeKV(data)
		if err != nil {
			if kv != nil || !errors.Is(err, meta.ErrMalformed) {
				t.Fatalf("DecodeKV failed with %v (kv %v, want nil and ErrMalformed)", err, kv)
			}
			return
		}
		enc := meta.EncodeKV(kv)
		kv2, err := meta.DecodeKV(enc)
		if err != nil {
			t.Fatalf("re-encoded kv does not decode: %v", err)
		}
		if !reflect.DeepEqual(kv, kv2) {
			t.Fatalf("round trip changed the kv:\n%+v\n%+v", kv, kv2)
		}
		if !bytes.Equal(meta.EncodeKV(kv2), enc) {
			t.Fatal("canonical encoding is not stable")
		}
	})
}
