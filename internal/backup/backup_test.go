package backup

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// fixture writes a backup of three streams into a new directory: an image
// of 2.5 chunks, an empty stream and a small one, two groups owning every
// hash slot between them.
func fixture(t *testing.T) (dir string, want map[string][]byte) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "b")
	w, err := Create(dir, 1024)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	want = map[string][]byte{"group-1": make([]byte, 2560), "controller": nil, "group-2": []byte("image two")}
	for i := range want["group-1"] {
		want["group-1"][i] = byte(rng.Uint32())
	}
	for _, name := range []string{"group-1", "controller", "group-2"} {
		sw, err := w.Stream(name)
		if err != nil {
			t.Fatal(err)
		}
		// Written in uneven pieces: chunk edges fall inside writes.
		b := want[name]
		for len(b) > 0 {
			n := min(len(b), 1+rng.IntN(700))
			if _, err := sw.Write(b[:n]); err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var low, high []slotstore.HashSlot
	for s := range slotstore.HashSlotCount {
		if s < 100 {
			low = append(low, slotstore.HashSlot(s))
		} else {
			high = append(high, slotstore.HashSlot(s))
		}
	}
	_, err = w.Finish(Manifest{ClusterID: "c-1", BackupID: "b-1", Created: time.Unix(1_800_000_000, 0).UTC(), RouteRevision: 7,
		Groups: []GroupImage{
			{Group: 1, Stream: "group-1", AppliedIndex: 40, Slots: low, Positions: map[slotstore.HashSlot]uint64{3: 9}},
			{Group: 2, Stream: "group-2", AppliedIndex: 12, Slots: high},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return dir, want
}

// TestBackupRoundTrip: what was written verifies and reads back byte for
// byte, in chunks of the size asked.
func TestBackupRoundTrip(t *testing.T) {
	dir, want := fixture(t)
	m, err := Verify(dir, VerifyOptions{ClusterID: "c-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.StreamByName("group-1").Chunks); got != 3 {
		t.Fatalf("the image in %d chunks, want 3 of at most 1 KiB", got)
	}
	if m.Groups[0].Positions[3] != 9 || m.RouteRevision != 7 || m.Format != FormatVersion {
		t.Fatalf("manifest %+v", m)
	}
	for name, b := range want {
		r, err := Open(dir, m, name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("stream %s: %d bytes back (%v), wrote %d", name, len(got), err, len(b))
		}
	}
}

// TestBackupRefusals: a backup that is partial, damaged, truncated,
// foreign, of a newer format, missing a chunk or holding one too many is
// refused, and the refusal says which.
func TestBackupRefusals(t *testing.T) {
	reseal := func(t *testing.T, dir string, edit func(*Manifest)) {
		m, err := ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, err := encodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ManifestName), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	flip := func(t *testing.T, path string, at int) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[at] ^= 0x20
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, want string
		opts       VerifyOptions
		damage     func(t *testing.T, dir string)
	}{
		{"partial", "partial backup", VerifyOptions{}, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ManifestName)) }},
		{"manifest changed", "checksum does not match", VerifyOptions{}, func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, ManifestName))
			b = bytes.Replace(b, []byte(`"applied_index": 40`), []byte(`"applied_index": 41`), 1)
			if err := os.WriteFile(filepath.Join(dir, ManifestName), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"manifest truncated", "does not parse", VerifyOptions{}, func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, ManifestName), 100); err != nil {
				t.Fatal(err)
			}
		}},
		{"newer format", "newer than this version", VerifyOptions{}, func(t *testing.T, dir string) {
			reseal(t, dir, func(m *Manifest) { m.Format = FormatVersion + 1 })
		}},
		{"foreign", "a backup of cluster c-1, not of c-2", VerifyOptions{ClusterID: "c-2"}, func(*testing.T, string) {}},
		{"chunk truncated", "truncated", VerifyOptions{}, func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, "group-1.0001"), 1000); err != nil {
				t.Fatal(err)
			}
		}},
		{"chunk damaged", "damaged", VerifyOptions{}, func(t *testing.T, dir string) { flip(t, filepath.Join(dir, "group-1.0002"), 5) }},
		{"chunk missing", "chunk group-2.0000 is missing", VerifyOptions{}, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "group-2.0000")) }},
		{"chunk too many", "does not name", VerifyOptions{}, func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "group-1.0003"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a slot twice", "hash slot 5 in groups 1 and 2", VerifyOptions{}, func(t *testing.T, dir string) {
			reseal(t, dir, func(m *Manifest) { m.Groups[1].Slots = append(m.Groups[1].Slots, 5) })
		}},
		{"a slot in no group", "own 255 of the 256", VerifyOptions{}, func(t *testing.T, dir string) {
			reseal(t, dir, func(m *Manifest) { m.Groups[1].Slots = m.Groups[1].Slots[1:] })
		}},
		{"chunks renamed", "want \"group-1.0001\"", VerifyOptions{}, func(t *testing.T, dir string) {
			reseal(t, dir, func(m *Manifest) {
				s := m.StreamByName("group-1")
				s.Chunks[1], s.Chunks[2] = s.Chunks[2], s.Chunks[1]
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := fixture(t)
			c.damage(t, dir)
			_, err := Verify(dir, c.opts)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Verify: %v, want ErrInvalid saying %q", err, c.want)
			}
		})
	}
}

// TestOpenHandsOutNoUnverifiedBytes: a damaged chunk in the middle of a
// stream stops the reader before any of its bytes are read.
func TestOpenHandsOutNoUnverifiedBytes(t *testing.T) {
	dir, want := fixture(t)
	m, err := Verify(dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "group-1.0001"))
	b[0] ^= 1
	if err := os.WriteFile(filepath.Join(dir, "group-1.0001"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ := Open(dir, m, "group-1")
	got, err := io.ReadAll(r)
	if !errors.Is(err, ErrInvalid) || !bytes.Equal(got, want["group-1"][:1024]) {
		t.Fatalf("read %d bytes, %v: want the first chunk only and ErrInvalid", len(got), err)
	}
}

// TestCreateAndFinishRefuse: a backup goes into an empty directory, one
// stream at a time, and a manifest that would not verify is not written.
func TestCreateAndFinishRefuse(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir, 0); err == nil {
		t.Fatal("a backup into a directory that is not empty")
	}
	w, err := Create(filepath.Join(dir, "new"), 0)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := w.Stream("group-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stream("other"); err == nil {
		t.Fatal("two streams open at once")
	}
	if _, err := sw.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stream("group-1"); err == nil {
		t.Fatal("a stream name twice")
	}
	if _, err := w.Stream("Bad/Name"); err == nil {
		t.Fatal("a stream name that is not a file name")
	}
	_, err = w.Finish(Manifest{ClusterID: "c", BackupID: "b", Groups: []GroupImage{{Group: 1, Stream: "group-1", Slots: []slotstore.HashSlot{0}}}})
	if err == nil || !strings.Contains(err.Error(), "own 1 of the 256") {
		t.Fatalf("a manifest whose groups miss slots: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new", ManifestName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a manifest was written: %v", err)
	}
}

// TestDiscard: a stream taken again is removed whole — its chunk files and
// its place in the manifest — and the backup verifies without it.
func TestDiscard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	w, err := Create(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"first", "second"} {
		sw, _ := w.Stream(name)
		if _, err := sw.Write([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Discard("first"); err != nil {
		t.Fatal(err)
	}
	if err := w.Discard("first"); err == nil {
		t.Fatal("discarded twice")
	}
	if _, err := w.Finish(Manifest{ClusterID: "c", BackupID: "b"}); err != nil {
		t.Fatal(err)
	}
	m, err := Verify(dir, VerifyOptions{})
	if err != nil || len(m.Streams) != 1 || m.Streams[0].Name != "second" {
		t.Fatalf("after a discard: %+v %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "first.0000")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a discarded chunk is still there: %v", err)
	}
}
