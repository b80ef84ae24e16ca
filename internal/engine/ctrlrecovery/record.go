package ctrlrecovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// File is the record a recovery leaves in the data directory for the
// node to act on when it starts.
const File = "controller-recovery.json"

// Record is File's content.
type Record struct {
	// ID is the recovery's (the base's record only).
	ID string `json:"id,omitempty"`
	// Rejoin: this node rejoins the controller group through JoinVia, the
	// API address of Node, the base.
	Rejoin  bool               `json:"rejoin,omitempty"`
	JoinVia string             `json:"join_via,omitempty"`
	Node    slotstore.NodeID   `json:"node"`
	Index   uint64             `json:"index"`
	Term    uint64             `json:"term"`
	Lost    []slotstore.NodeID `json:"lost"`
	// LostRaftAddrs are the lost nodes' Raft addresses (fenced).
	LostRaftAddrs []string `json:"lost_raft_addrs"`
	// Tail are the commands the base logged past Index.
	Tail [][]byte `json:"tail,omitempty"`
	AtMs int64    `json:"at_ms"`
}

// WriteRecord writes rec into the data directory dir.
func WriteRecord(dir string, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := backup.WriteFile(dir, File, b); err != nil {
		return fmt.Errorf("cluster: write %s: %w", File, err)
	}
	return nil
}

// ReadRecord reads the data directory's record, if any (nil: none).
func ReadRecord(dir string) (*Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read %s: %w", File, err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", File, err)
	}
	if rec.Node == 0 || len(rec.Lost) == 0 || len(rec.Lost) != len(rec.LostRaftAddrs) || rec.Rejoin == (rec.ID != "") {
		return nil, fmt.Errorf("cluster: %s is not a recovery's record", File)
	}
	return &rec, nil
}

// Fenced reports whether the recovery (nil: none) named id lost.
func (rec *Record) Fenced(id slotstore.NodeID) bool {
	return rec != nil && slices.Contains(rec.Lost, id)
}
