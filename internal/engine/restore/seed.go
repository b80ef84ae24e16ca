package restore

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// SeedFile is the seed's name in a restored data directory.
const SeedFile = "restored.json"

// seedFormat is the seed's format version.
const seedFormat = 1

// Seed is what a restore leaves a node to start from (package doc).
type Seed struct {
	Format       int              `json:"format"`
	ClusterID    string           `json:"cluster_id"`
	DeploymentID uint64           `json:"deployment_id"`
	NodeID       slotstore.NodeID `json:"node_id"`
	// Members and ReplicationFactor are the founding the stores were laid
	// out for; the node is started with the same members.
	Members           []controller.Node  `json:"members"`
	ReplicationFactor int                `json:"replication_factor"`
	Controller        controller.Restore `json:"controller"`
	// Starts are where this node's replicas' Raft logs begin.
	Starts []Start `json:"starts"`
}

// Start is where one replica's Raft log begins (raftlog.Start).
type Start struct {
	Group   slotstore.GroupID `json:"group"`
	Replica uint64            `json:"replica"`
	Index   uint64            `json:"index"`
	Term    uint64            `json:"term"`
	// Members are the group's voters: replica id → Raft address.
	Members map[uint64]string `json:"members"`
}

// DeploymentID is the Raft deployment id of a restored cluster: derived
// from its cluster id (FNV-64a), never 1, the id of a cluster founded new.
func DeploymentID(clusterID string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(clusterID))
	return h.Sum64() | 1<<63
}

// ReadSeed reads the seed of dataDir: ok false when the directory was not
// laid out by a restore.
func ReadSeed(dataDir string) (*Seed, bool, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, SeedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("restore: %w", err)
	}
	var s Seed
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, false, fmt.Errorf("restore: %s: %w", SeedFile, err)
	}
	if s.Format != seedFormat {
		return nil, false, fmt.Errorf("restore: %s has format %d; this binary reads %d", SeedFile, s.Format, seedFormat)
	}
	if s.ClusterID == "" || s.DeploymentID == 0 || s.NodeID == 0 || len(s.Members) == 0 {
		return nil, false, fmt.Errorf("restore: %s is incomplete", SeedFile)
	}
	return &s, true, nil
}

// CheckMembers says whether the node is started with the members its store
// was laid out for: any other founding would place groups on nodes that do
// not hold them.
func (s *Seed) CheckMembers(members []controller.Node) error {
	key := func(ns []controller.Node) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = fmt.Sprintf("%d=%s", n.ID, n.RaftAddr)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(key(s.Members), key(members)) {
		return fmt.Errorf("restore: this data directory was restored for the members %v; the node is started with %v (start it with the --initial-members given to the restore)",
			key(s.Members), key(members))
	}
	return nil
}

// write writes the seed into dataDir, synced, whole or not at all.
func (s *Seed) write(dataDir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return backup.WriteFile(dataDir, SeedFile, b)
}
