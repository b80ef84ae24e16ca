package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
)

// VerifyOptions are what a caller expects of a backup.
type VerifyOptions struct {
	// ClusterID, when set, is the cluster the backup must be of.
	ClusterID string
}

// Verify checks the backup in dir whole — its manifest, and every chunk's
// presence, size and checksum, every stream's — and that the directory
// holds no chunk the manifest does not name. It returns the manifest.
// Every refusal wraps ErrInvalid.
func Verify(dir string, o VerifyOptions) (*Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if o.ClusterID != "" && m.ClusterID != o.ClusterID {
		return nil, fmt.Errorf("%w: a backup of cluster %s, not of %s", ErrInvalid, m.ClusterID, o.ClusterID)
	}
	named := map[string]bool{ManifestName: true}
	for i := range m.Streams {
		s := &m.Streams[i]
		for _, c := range s.Chunks {
			named[c.File] = true
		}
		r := m.open(dir, s)
		_, err := io.Copy(io.Discard, r)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !named[e.Name()] && chunkFile.MatchString(e.Name()) {
			return nil, fmt.Errorf("%w: %s holds chunk %s, which the manifest does not name", ErrInvalid, dir, e.Name())
		}
	}
	return m, nil
}

// Open reads stream name of the backup in dir, as verified by m: every
// chunk is checked (size and checksum) as it is read, and the stream whole
// at its end; a mismatch is an error wrapping ErrInvalid, returned before
// the bytes of a bad chunk are.
func Open(dir string, m *Manifest, name string) (io.ReadCloser, error) {
	s := m.StreamByName(name)
	if s == nil {
		return nil, fmt.Errorf("%w: no stream %q", ErrInvalid, name)
	}
	return m.open(dir, s), nil
}

func (m *Manifest) open(dir string, s *Stream) io.ReadCloser {
	return &streamReader{dir: dir, s: s, whole: sha256.New()}
}

// streamReader reads a stream's chunks in order. Each chunk is read whole
// and checked before any of it is handed out (chunks are bounded by
// MaxChunkBytes), so no caller ever sees unverified bytes.
type streamReader struct {
	dir   string
	s     *Stream
	next  int    // the next chunk to load
	buf   []byte // what is left of the loaded chunk
	whole hash.Hash
	err   error
}

func (r *streamReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.next == len(r.s.Chunks) {
			if got := hex.EncodeToString(r.whole.Sum(nil)); got != r.s.SHA256 {
				r.err = fmt.Errorf("%w: stream %s does not match its checksum", ErrInvalid, r.s.Name)
			} else {
				r.err = io.EOF
			}
			continue
		}
		r.err = r.load(r.s.Chunks[r.next])
		r.next++
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// load reads chunk c whole and checks it.
func (r *streamReader) load(c Chunk) error {
	f, err := os.Open(filepath.Join(r.dir, c.File))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: chunk %s is missing", ErrInvalid, c.File)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, c.Bytes+1))
	if err != nil {
		return err
	}
	if int64(len(b)) != c.Bytes {
		return fmt.Errorf("%w: chunk %s holds %d bytes, the manifest says %d (truncated or grown)", ErrInvalid, c.File, len(b), c.Bytes)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != c.SHA256 {
		return fmt.Errorf("%w: chunk %s does not match its checksum (damaged)", ErrInvalid, c.File)
	}
	r.whole.Write(b)
	r.buf = b
	return nil
}

func (r *streamReader) Close() error { return nil }
