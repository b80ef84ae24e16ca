package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// FormatVersion is the manifest format this code writes and the newest it
// reads.
const FormatVersion = 1

// ManifestName is the manifest's file name in a backup directory.
const ManifestName = "manifest.json"

// maxManifestBytes bounds the manifest Verify reads (256 groups with 256
// slots each is well under it).
const maxManifestBytes = 16 << 20

// ErrInvalid is wrapped by every refusal of a backup directory: partial,
// corrupt, truncated, foreign or of a newer format.
var ErrInvalid = errors.New("backup: not a valid backup")

// Manifest describes one backup.
type Manifest struct {
	Format    int       `json:"format"`
	ClusterID string    `json:"cluster_id"`
	BackupID  string    `json:"backup_id"`
	Created   time.Time `json:"created"`
	// RouteRevision is the routing table's revision the backup was cut
	// under.
	RouteRevision uint64 `json:"route_revision"`
	// Groups are the groups' images, one stream each.
	Groups []GroupImage `json:"groups"`
	// Streams are every stream of the backup, images included, by name.
	Streams []Stream `json:"streams"`
}

// GroupImage is one group's part of a backup: its image stream and the
// position it was cut at.
type GroupImage struct {
	Group        slotstore.GroupID `json:"group"`
	Stream       string            `json:"stream"`
	AppliedIndex uint64            `json:"applied_index"`
	// Slots are the hash slots the image owns; Positions each one's
	// change-log head (its last numbered change) in the image.
	Slots     []slotstore.HashSlot          `json:"slots"`
	Positions map[slotstore.HashSlot]uint64 `json:"positions,omitempty"`
}

// Stream is one stream's chunks and its whole length and checksum.
type Stream struct {
	Name   string  `json:"name"`
	Bytes  int64   `json:"bytes"`
	SHA256 string  `json:"sha256"`
	Chunks []Chunk `json:"chunks"`
}

// Chunk is one chunk file of a stream.
type Chunk struct {
	File   string `json:"file"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// sealed is the manifest file: the body and the SHA-256 of its JSON.
type sealed struct {
	Manifest json.RawMessage `json:"manifest"`
	SHA256   string          `json:"sha256"`
}

// streamName is what a stream may be called: a file-name-safe word.
var streamName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)

// chunkFile is a chunk's file name: the stream, a dot, four digits or more.
var chunkFile = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}\.[0-9]{4,9}$`)

// encodeManifest is the manifest file's bytes.
func encodeManifest(m *Manifest) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	return json.MarshalIndent(sealed{Manifest: body, SHA256: hex.EncodeToString(sum[:])}, "", "  ")
}

// DecodeManifest parses a manifest file and checks it by itself: its
// checksum, its format, and that its streams and groups are well formed
// (names, sizes, chunks that add up). It does not look at the chunks.
func DecodeManifest(b []byte) (*Manifest, error) {
	var s sealed
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: the manifest does not parse: %v", ErrInvalid, err)
	}
	body, err := compactJSON(s.Manifest)
	if err != nil {
		return nil, fmt.Errorf("%w: the manifest does not parse: %v", ErrInvalid, err)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != s.SHA256 {
		return nil, fmt.Errorf("%w: the manifest's checksum does not match its contents (changed or damaged)", ErrInvalid)
	}
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: the manifest does not parse: %v", ErrInvalid, err)
	}
	if m.Format > FormatVersion {
		return nil, fmt.Errorf("%w: format %d is newer than this version of slotmeta reads (%d)", ErrInvalid, m.Format, FormatVersion)
	}
	if m.Format < 1 {
		return nil, fmt.Errorf("%w: format %d", ErrInvalid, m.Format)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return &m, nil
}

// compactJSON is b without insignificant space: the body exactly as
// encodeManifest hashed it (json.Marshal writes none; MarshalIndent only
// adds it).
func compactJSON(b []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// check is the manifest's own consistency.
func (m *Manifest) check() error {
	if m.ClusterID == "" || m.BackupID == "" {
		return errors.New("no cluster or backup id")
	}
	streams := map[string]*Stream{}
	files := map[string]bool{}
	for i := range m.Streams {
		s := &m.Streams[i]
		if !streamName.MatchString(s.Name) {
			return fmt.Errorf("stream name %q", s.Name)
		}
		if streams[s.Name] != nil {
			return fmt.Errorf("stream %q twice", s.Name)
		}
		streams[s.Name] = s
		var total int64
		for n, c := range s.Chunks {
			if c.File != chunkName(s.Name, n) {
				return fmt.Errorf("stream %q: chunk %d is %q, want %q", s.Name, n, c.File, chunkName(s.Name, n))
			}
			if c.Bytes <= 0 || c.Bytes > MaxChunkBytes || len(c.SHA256) != 64 {
				return fmt.Errorf("chunk %q: %d bytes, checksum %q", c.File, c.Bytes, c.SHA256)
			}
			files[c.File] = true
			total += c.Bytes
		}
		if total != s.Bytes || len(s.SHA256) != 64 {
			return fmt.Errorf("stream %q: %d bytes in its chunks, %d recorded", s.Name, total, s.Bytes)
		}
	}
	seen := map[slotstore.GroupID]bool{}
	owner := map[slotstore.HashSlot]slotstore.GroupID{}
	for _, g := range m.Groups {
		if g.Group == 0 || seen[g.Group] {
			return fmt.Errorf("group %d missing or twice", g.Group)
		}
		seen[g.Group] = true
		if streams[g.Stream] == nil {
			return fmt.Errorf("group %d: no stream %q", g.Group, g.Stream)
		}
		for _, hs := range g.Slots {
			if !hs.Valid() {
				return fmt.Errorf("group %d: hash slot %d", g.Group, hs)
			}
			if o, ok := owner[hs]; ok {
				return fmt.Errorf("hash slot %d in groups %d and %d", hs, o, g.Group)
			}
			owner[hs] = g.Group
		}
	}
	if len(m.Groups) > 0 && len(owner) != slotstore.HashSlotCount {
		return fmt.Errorf("the groups own %d of the %d hash slots", len(owner), slotstore.HashSlotCount)
	}
	return nil
}

// chunkName is the file of chunk n of stream s.
func chunkName(s string, n int) string { return fmt.Sprintf("%s.%04d", s, n) }

// ReadManifest reads and decodes dir's manifest (DecodeManifest); a
// directory without one is a partial backup.
func ReadManifest(dir string) (*Manifest, error) {
	f, err := os.Open(filepath.Join(dir, ManifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no %s (a partial backup, or not a backup)", ErrInvalid, dir, ManifestName)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxManifestBytes {
		return nil, fmt.Errorf("%w: the manifest is over %d bytes", ErrInvalid, maxManifestBytes)
	}
	return DecodeManifest(b)
}

// StreamByName returns the stream called name, or nil.
func (m *Manifest) StreamByName(name string) *Stream {
	for i := range m.Streams {
		if m.Streams[i].Name == name {
			return &m.Streams[i]
		}
	}
	return nil
}
