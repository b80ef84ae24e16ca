package fsm_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// decodeImage is an independent reader of the image format: it reports
// whether b starts with a complete, consistent image and what it holds.
func decodeImage(b []byte) (image, bool) {
	if len(b) < 8 || string(b[:4]) != "SMS1" {
		return image{}, false
	}
	im := image{group: binary.BigEndian.Uint32(b[4:8])}
	p := b[8:]
	chunk := func() ([]byte, bool) {
		n, w := binary.Uvarint(p)
		if w <= 0 || n > uint64(len(p)-w) {
			return nil, false
		}
		c := p[w : w+int(n)]
		p = p[w+int(n):]
		return c, true
	}
	for len(p) > 0 && p[0] == 0x01 {
		p = p[1:]
		k, ok := chunk()
		if !ok {
			return image{}, false
		}
		v, ok := chunk()
		if !ok {
			return image{}, false
		}
		im.recs = append(im.recs, row{k, v})
	}
	if len(p) < 13 || p[0] != 0x02 {
		return image{}, false
	}
	im.count = binary.BigEndian.Uint64(p[1:9])
	end := len(b) - len(p) + 9
	if crc32.Checksum(b[:end], castagnoli) != binary.BigEndian.Uint32(p[9:13]) || im.count != uint64(len(im.recs)) {
		return image{}, false
	}
	return im, true
}

// FuzzRecoverFromSnapshot feeds mutated images to RecoverFromSnapshot. Each
// is either rejected with ErrCorruptSnapshot and the replica's state left
// byte for byte as it was, or accepted — and then the state is exactly what
// the image holds (for the seed: the source's state).
func FuzzRecoverFromSnapshot(f *testing.F) {
	img, want, wantIdx := smallImage(f)
	db, r := dirtyTarget(f)
	before, beforeIdx := span(f, db, 1), r.AppliedIndex()
	beforeImg := snapshot(f, r)
	other := span(f, db, 2)
	// Let Pebble's background work (flushes, compactions) finish now: work
	// it does while an input runs shows up as new coverage and sends the
	// fuzzer minimizing inputs that found nothing.
	if err := db.Pebble().Flush(); err != nil {
		f.Fatal(err)
	}
	if err := db.Pebble().Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff, 0xff}, false); err != nil {
		f.Fatal(err)
	}

	f.Add(img)
	f.Add(img[:len(img)/2])
	f.Add(append(bytes.Clone(img), 0x01, 0x02))
	flipped := bytes.Clone(img)
	flipped[len(flipped)/2] ^= 0x20
	f.Add(flipped)

	f.Fuzz(func(t *testing.T, data []byte) {
		err := r.RecoverFromSnapshot(bytes.NewReader(data), nil)
		if err != nil {
			if !errors.Is(err, fsm.ErrCorruptSnapshot) {
				t.Fatalf("rejected with %v, not ErrCorruptSnapshot", err)
			}
			if d := diffSpan(span(t, db, 1), before); d != "" {
				t.Fatalf("a rejected image changed the state: %s", d)
			}
			if r.AppliedIndex() != beforeIdx {
				t.Fatalf("a rejected image moved the applied index to %d", r.AppliedIndex())
			}
			return
		}
		im, ok := decodeImage(data)
		if !ok || im.group != 1 {
			t.Fatalf("accepted an image that is not one (%d bytes)", len(data))
		}
		var exp []row
		for _, rec := range im.recs {
			exp = append(exp, row{append(meta.GroupPrefix(1), rec.k...), rec.v})
		}
		got := span(t, db, 1)
		sameSpan(t, "accepted image", got, exp)
		if bytes.HasPrefix(data, img) {
			sameSpan(t, "seed image", got, want)
			if r.AppliedIndex() != wantIdx {
				t.Fatalf("applied %d, want %d", r.AppliedIndex(), wantIdx)
			}
		}
		sameSpan(t, "other group", span(t, db, 2), other)
		// Put the replica back for the next input.
		if err := r.RecoverFromSnapshot(bytes.NewReader(beforeImg), nil); err != nil {
			t.Fatal(err)
		}
		sameSpan(t, "restored", span(t, db, 1), before)
	})
}
