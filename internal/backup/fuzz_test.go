package backup

import (
	"reflect"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// FuzzDecodeManifest: any bytes as a manifest are refused with ErrInvalid
// or accepted, never a panic; an accepted manifest is well formed (check)
// and encodes to one that decodes the same. Corpus in
// testdata/fuzz/FuzzDecodeManifest.
func FuzzDecodeManifest(f *testing.F) {
	all := make([]slotstore.HashSlot, slotstore.HashSlotCount)
	for i := range all {
		all[i] = slotstore.HashSlot(i)
	}
	good := &Manifest{Format: FormatVersion, ClusterID: "c", BackupID: "b", Created: time.Unix(1_800_000_000, 0).UTC(),
		Groups: []GroupImage{{Group: 1, Stream: "group-1", AppliedIndex: 3, Slots: all, Positions: map[slotstore.HashSlot]uint64{1: 2}}},
		Streams: []Stream{{Name: "group-1", Bytes: 3, SHA256: sha64("a"), Chunks: []Chunk{{File: "group-1.0000", Bytes: 3, SHA256: sha64("b")}}},
			{Name: "controller", SHA256: sha64("c"), Chunks: []Chunk{}}}}
	b, err := encodeManifest(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte(`{"manifest":{},"sha256":""}`))
	f.Add([]byte(`{"manifest":null,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(data)
		if err != nil {
			return
		}
		if err := m.check(); err != nil {
			t.Fatalf("accepted a manifest that does not check: %v", err)
		}
		again, err := encodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := DecodeManifest(again)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encoded manifest decodes to %+v, %v", m2, err)
		}
	})
}

func sha64(s string) string {
	out := make([]byte, 64)
	for i := range out {
		out[i] = "0123456789abcdef"[(int(s[0])+i)%16]
	}
	return string(out)
}
