package meta_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

func encodedSamples() [][]byte {
	var out [][]byte
	for _, c := range sampleCommands() {
		out = append(out, mustEncode(c))
	}
	return out
}

func entryOf(n int) [][]byte {
	cmds := make([][]byte, n)
	for i := range cmds {
		cmds[i] = mustEncode(routed(&meta.PutKV{
			Header: meta.Header{TimeMs: int64(i)},
			Key:    fmt.Sprintf("key-%d", i), Value: binaryValue(i % 50),
		}))
	}
	return cmds
}

func TestEntryRoundTrip(t *testing.T) {
	for name, cmds := range map[string][][]byte{
		"one":           entryOf(1),
		"samples":       encodedSamples(),
		"256":           entryOf(256),
		"max count":     make([][]byte, meta.MaxCommandsPerEntry), // empty commands: framing only
		"opaque frames": {{}, {0xFF}, bytes.Repeat([]byte{0}, 300)},
	} {
		enc := meta.EncodeEntry(cmds)
		got, err := meta.DecodeEntry(enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(cmds) {
			t.Fatalf("%s: %d commands, want %d", name, len(got), len(cmds))
		}
		for i := range cmds {
			if !bytes.Equal(got[i], cmds[i]) {
				t.Fatalf("%s: command %d = % x, want % x", name, i, got[i], cmds[i])
			}
		}
		if !bytes.Equal(meta.EncodeEntry(got), enc) {
			t.Fatalf("%s: re-encoding differs", name)
		}
	}
	// Each framed sample decodes to the original command.
	got, _ := meta.DecodeEntry(meta.EncodeEntry(encodedSamples()))
	for i, c := range sampleCommands() {
		if d := mustDecodeCommand(t, got[i]); !reflect.DeepEqual(d, c) {
			t.Fatalf("framed command %d = %+v, want %+v", i, d, c)
		}
	}
}

func TestEntryGoldenEncoding(t *testing.T) {
	if got, want := meta.EncodeEntry([][]byte{{0xAA}, {}}), []byte{1, 2, 1, 0xAA, 0}; !bytes.Equal(got, want) {
		t.Fatalf("EncodeEntry = % x, want % x", got, want)
	}
}

// The decoded commands alias the entry (documented), but each is capped at
// its own length: appending to one must not overwrite the next.
func TestDecodeEntryFramesAreCapped(t *testing.T) {
	cmds := [][]byte{[]byte("first"), []byte("second")}
	data := meta.EncodeEntry(cmds)
	got, err := meta.DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got[0], "XXXXXXXX"...)
	if string(got[1]) != "second" {
		t.Fatalf("appending to command 0 overwrote command 1: %q", got[1])
	}
	if &got[0][0] != &data[3] {
		t.Fatal("command 0 does not alias the entry as documented")
	}
}

func TestDecodeEntryRejects(t *testing.T) {
	good := meta.EncodeEntry(entryOf(3))
	for _, v := range []byte{0, 2, 0xFF} {
		b := bytes.Clone(good)
		b[0] = v
		_, err := meta.DecodeEntry(b)
		wantMalformed(t, fmt.Sprintf("version %d", v), err)
	}
	for cut := range len(good) {
		_, err := meta.DecodeEntry(good[:cut:cut])
		wantMalformed(t, fmt.Sprintf("cut %d/%d", cut, len(good)), err)
	}
	for _, extra := range [][]byte{{0}, {1, 0}, good} {
		_, err := meta.DecodeEntry(cat(good, extra))
		wantMalformed(t, fmt.Sprintf("trailing % x", extra), err)
	}
	for name, b := range map[string][]byte{
		"no commands":       meta.EncodeEntry(nil),
		"count over max":    cat([]byte{1}, binary.AppendUvarint(nil, meta.MaxCommandsPerEntry+1), make([]byte, meta.MaxCommandsPerEntry+1)),
		"huge count":        cat([]byte{1}, binary.AppendUvarint(nil, 1<<62)),
		"overflowing count": cat([]byte{1}, bytes.Repeat([]byte{0xFF}, 10), []byte{1}),
		"count > frames":    {1, 3, 1, 'a', 1, 'b'},
		"frame past end":    {1, 1, 5, 'a', 'b'},
		"frame over limit":  cat([]byte{1, 1}, binary.AppendUvarint(nil, meta.MaxEntryBytes+1)),
		"frame 2^63":        cat([]byte{1, 1}, binary.AppendUvarint(nil, 1<<63), []byte{'a'}),
	} {
		_, err := meta.DecodeEntry(b)
		wantMalformed(t, name, err)
	}
}

func TestResultsRoundTrip(t *testing.T) {
	rs := sampleResults()
	for n := range len(rs) + 1 {
		enc := meta.EncodeResults(rs[:n])
		got, err := meta.DecodeResults(enc)
		if err != nil {
			t.Fatalf("%d results: %v", n, err)
		}
		if len(got) != n || (n > 0 && !reflect.DeepEqual(got, rs[:n])) {
			t.Fatalf("%d results: round trip\n got %+v\nwant %+v", n, got, rs[:n])
		}
		if !bytes.Equal(meta.EncodeResults(got), enc) {
			t.Fatalf("%d results: re-encoding differs", n)
		}
	}
	if got, err := meta.DecodeResults(meta.EncodeResults(nil)); err != nil || len(got) != 0 {
		t.Fatalf("no results: %v, %v", got, err)
	}
	for i, r := range rs {
		got, err := meta.DecodeResult(meta.EncodeResult(&r))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("result %d: %+v, %v; want %+v", i, got, err, r)
		}
	}
}

func TestResultGoldenEncoding(t *testing.T) {
	r := &meta.Result{Code: slotstore.CodeNotFound, Revision: 3, Replayed: true}
	want := cat([]byte{1, 9}, []byte("not_found"), []byte{0, 3, 0, 1})
	if got := meta.EncodeResult(r); !bytes.Equal(got, want) {
		t.Fatalf("EncodeResult = % x, want % x", got, want)
	}
	if got, want := meta.EncodeResults([]meta.Result{{Revision: 1}}), []byte{1, 1, 0, 0, 1, 0, 0}; !bytes.Equal(got, want) {
		t.Fatalf("EncodeResults = % x, want % x", got, want)
	}
}

func TestResultsDecodeRejects(t *testing.T) {
	decOne := func(b []byte) error { _, err := meta.DecodeResult(b); return err }
	decAll := func(b []byte) error { _, err := meta.DecodeResults(b); return err }
	one := meta.EncodeResult(&sampleResults()[0])
	all := meta.EncodeResults(sampleResults())
	for _, tc := range []struct {
		name string
		enc  []byte
		dec  func([]byte) error
	}{{"DecodeResult", one, decOne}, {"DecodeResults", all, decAll}} {
		for _, v := range []byte{0, 2, 0xFF} {
			b := bytes.Clone(tc.enc)
			b[0] = v
			wantMalformed(t, fmt.Sprintf("%s version %d", tc.name, v), tc.dec(b))
		}
		for cut := range len(tc.enc) {
			wantMalformed(t, fmt.Sprintf("%s cut %d/%d", tc.name, cut, len(tc.enc)), tc.dec(tc.enc[:cut:cut]))
		}
		// The last byte is the Replayed flag of the last result.
		for _, bad := range []byte{2, 0x80, 0xFF} {
			b := bytes.Clone(tc.enc)
			b[len(b)-1] = bad
			wantMalformed(t, fmt.Sprintf("%s replayed=%d", tc.name, bad), tc.dec(b))
		}
	}
	longCode := &meta.Result{Code: slotstore.Code(strings.Repeat("c", 65))}
	wantMalformed(t, "code over 64 bytes", decOne(meta.EncodeResult(longCode)))
	wantMalformed(t, "code over 64 bytes in results", decAll(meta.EncodeResults([]meta.Result{*longCode})))
	wantMalformed(t, "message over limit", decOne(meta.EncodeResult(&meta.Result{Message: strings.Repeat("m", meta.MaxStringBytes+1)})))
	wantMalformed(t, "too many results", decAll(cat([]byte{1}, binary.AppendUvarint(nil, meta.MaxCommandsPerEntry+1))))
	wantMalformed(t, "huge result count", decAll(cat([]byte{1}, binary.AppendUvarint(nil, 1<<60))))
	wantMalformed(t, "fewer results than counted", decAll(cat([]byte{1, 2}, meta.EncodeResult(&meta.Result{})[1:])))
	wantMalformed(t, "huge value length", decOne(cat([]byte{1, 0, 0, 0}, binary.AppendUvarint(nil, 1<<40))))
}

func TestResultErr(t *testing.T) {
	ok := meta.Result{Revision: 5}
	if !ok.OK() || ok.Err() != nil {
		t.Fatalf("success result: OK %v Err %v", ok.OK(), ok.Err())
	}
	r := meta.Result{Code: slotstore.CodeNotFound, Message: "no such user"}
	if r.OK() {
		t.Fatal("not_found result reports OK")
	}
	err := r.Err()
	if slotstore.ErrorCode(err) != slotstore.CodeNotFound || !errors.Is(err, slotstore.ErrNotFound) {
		t.Fatalf("Err() = %v", err)
	}
	if !strings.Contains(err.Error(), "no such user") {
		t.Fatalf("Err() lost the message: %v", err)
	}
}
