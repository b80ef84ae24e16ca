package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
)

// DefaultChunkBytes is the chunk size a Writer uses unless told otherwise;
// MaxChunkBytes the largest Verify accepts.
const (
	DefaultChunkBytes = 4 << 20
	MaxChunkBytes     = 64 << 20
)

// Writer writes one backup into an empty directory.
type Writer struct {
	dir        string
	chunkBytes int64
	m          Manifest
	open       bool // a stream is being written
	done       bool
}

// Create starts a backup in dir, which must be empty or not exist yet.
// chunkBytes ≤ 0 means DefaultChunkBytes.
func Create(dir string, chunkBytes int64) (*Writer, error) {
	if chunkBytes <= 0 {
		chunkBytes = DefaultChunkBytes
	}
	if chunkBytes > MaxChunkBytes {
		return nil, fmt.Errorf("backup: chunks of %d bytes, at most %d", chunkBytes, MaxChunkBytes)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(ents) > 0 {
		return nil, fmt.Errorf("backup: %s is not empty (%d entries): a backup goes into a directory of its own", dir, len(ents))
	}
	return &Writer{dir: dir, chunkBytes: chunkBytes, m: Manifest{Format: FormatVersion}}, nil
}

// StreamWriter writes one stream: an io.Writer cutting what it is given
// into chunk files.
type StreamWriter struct {
	w     *Writer
	s     Stream
	f     *os.File
	cur   Chunk
	chunk hash.Hash // of the current chunk
	whole hash.Hash // of the stream
	err   error
}

// Stream starts stream name; the previous one must be closed.
func (w *Writer) Stream(name string) (*StreamWriter, error) {
	switch {
	case w.done:
		return nil, errors.New("backup: the backup is finished")
	case w.open:
		return nil, errors.New("backup: a stream is still open")
	case !streamName.MatchString(name):
		return nil, fmt.Errorf("backup: stream name %q", name)
	case w.m.StreamByName(name) != nil:
		return nil, fmt.Errorf("backup: stream %q twice", name)
	}
	w.open = true
	return &StreamWriter{w: w, s: Stream{Name: name}, whole: sha256.New()}, nil
}

// Write appends p to the stream, starting new chunks as they fill.
func (sw *StreamWriter) Write(p []byte) (int, error) {
	if sw.err != nil {
		return 0, sw.err
	}
	n := 0
	for len(p) > 0 {
		if sw.f == nil {
			if sw.err = sw.startChunk(); sw.err != nil {
				return n, sw.err
			}
		}
		room := sw.w.chunkBytes - sw.cur.Bytes
		part := p[:min(int64(len(p)), room)]
		if _, sw.err = sw.f.Write(part); sw.err != nil {
			return n, sw.err
		}
		sw.chunk.Write(part)
		sw.whole.Write(part)
		sw.cur.Bytes += int64(len(part))
		sw.s.Bytes += int64(len(part))
		n += len(part)
		p = p[len(part):]
		if sw.cur.Bytes == sw.w.chunkBytes {
			if sw.err = sw.endChunk(); sw.err != nil {
				return n, sw.err
			}
		}
	}
	return n, nil
}

func (sw *StreamWriter) startChunk() error {
	name := chunkName(sw.s.Name, len(sw.s.Chunks))
	f, err := os.OpenFile(filepath.Join(sw.w.dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	sw.f, sw.cur, sw.chunk = f, Chunk{File: name}, sha256.New()
	return nil
}

// endChunk syncs and closes the current chunk and records it.
func (sw *StreamWriter) endChunk() error {
	err := sw.f.Sync()
	if cerr := sw.f.Close(); err == nil {
		err = cerr
	}
	sw.f = nil
	if err != nil {
		return err
	}
	sw.cur.SHA256 = hex.EncodeToString(sw.chunk.Sum(nil))
	sw.s.Chunks = append(sw.s.Chunks, sw.cur)
	return nil
}

// Close ends the stream and records it in the manifest; a stream whose
// writes failed is not recorded (the backup cannot be finished then).
func (sw *StreamWriter) Close() error {
	if sw.f != nil && sw.err == nil {
		sw.err = sw.endChunk()
	}
	if sw.f != nil {
		_ = sw.f.Close()
		sw.f = nil
		sw.s.Chunks = append(sw.s.Chunks, sw.cur) // unfinished: Discard removes it
	}
	sw.w.open = false
	if sw.err != nil {
		// Recorded as it stands, for Discard to remove; the backup cannot
		// be finished while it is there (Finish checks every stream).
		sw.s.SHA256 = "failed"
		sw.w.m.Streams = append(sw.w.m.Streams, sw.s)
		return sw.err
	}
	sw.s.SHA256 = hex.EncodeToString(sw.whole.Sum(nil))
	if sw.s.Chunks == nil {
		sw.s.Chunks = []Chunk{}
	}
	sw.w.m.Streams = append(sw.w.m.Streams, sw.s)
	return nil
}

// Discard removes a closed stream — its chunk files and its place in the
// manifest — so that the backup goes on without it (an image taken
// again, a source that failed midway).
func (w *Writer) Discard(name string) error {
	if w.open {
		return errors.New("backup: a stream is still open")
	}
	i := slices.IndexFunc(w.m.Streams, func(s Stream) bool { return s.Name == name })
	if i < 0 {
		return fmt.Errorf("backup: no stream %q", name)
	}
	for _, c := range w.m.Streams[i].Chunks {
		if err := os.Remove(filepath.Join(w.dir, c.File)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	w.m.Streams = slices.Delete(w.m.Streams, i, i+1)
	return nil
}

// Finish writes the manifest — m's identity and groups with the streams
// written — synced and renamed into place, and the directory synced: only
// then is the backup whole. It returns the manifest as written.
func (w *Writer) Finish(m Manifest) (*Manifest, error) {
	if w.done || w.open {
		return nil, errors.New("backup: a stream failed or is still open")
	}
	m.Format, m.Streams = FormatVersion, w.m.Streams
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("backup: the manifest would not verify: %w", err)
	}
	b, err := encodeManifest(&m)
	if err != nil {
		return nil, err
	}
	if err := WriteFile(w.dir, ManifestName, b); err != nil {
		return nil, err
	}
	w.done = true
	return &m, nil
}

// WriteFile writes name in dir whole or not at all: a temporary file
// written and synced, renamed into place, the directory synced (a
// backup's manifest, a restore's seed).
func WriteFile(dir, name string, b []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	if err := writeSynced(tmp, b); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
