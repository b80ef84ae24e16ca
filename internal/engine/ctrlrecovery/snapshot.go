package ctrlrecovery

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lni/dragonboat/v4"
	pb "github.com/lni/dragonboat/v4/raftpb"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// exportController exports the running controller replica's state into
// dir (dragonboat's exported snapshot) and returns the snapshot's
// directory; its index is at least commit.
func exportController(ctx context.Context, nh *dragonboat.NodeHost, dir string, commit uint64) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	idx, err := nh.SyncRequestSnapshot(ctx, controller.ShardID, dragonboat.SnapshotOption{Exported: true, ExportPath: dir})
	if err != nil {
		return "", fmt.Errorf("cluster: export the controller's state: %w", err)
	}
	if idx < commit {
		return "", fmt.Errorf("cluster: the controller's state was exported at %d, before its commit %d", idx, commit)
	}
	return filepath.Join(dir, fmt.Sprintf("snapshot-%016X", idx)), nil
}

// votersOf is the controller group's voters as the local replica's
// applied membership has them (none while dragonboat has not published it).
func votersOf(nh *dragonboat.NodeHost) []slotstore.NodeID {
	var out []slotstore.NodeID
	for _, si := range nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true}).ShardInfoList {
		if si.ShardID == controller.ShardID {
			for id := range si.Replicas {
				out = append(out, slotstore.NodeID(id))
			}
		}
	}
	slices.Sort(out)
	return out
}

// removeReplicaData removes a stopped replica's Raft data, retrying while
// dragonboat still unloads it, so that it can start again with the same
// id as a new member. dragonboat's RemoveData leaves the replica's
// snapshot directory marked deleted (internal/server/environment.go
// RemoveSnapshotDir), and StartReplica then refuses the id for good
// (nodehost.go: ErrDirMarkedAsDeleted → ErrReplicaRemoved): right for a
// replica removed from its group, not for one the recovery left out of the
// membership to rejoin, so the marked directory goes too
// (<raft>/<host>/<deployment>/snapshot-part-N/snapshot-<shard>-<replica>).
func removeReplicaData(ctx context.Context, nh *dragonboat.NodeHost, raftDir string, shard, replica uint64) error {
	for {
		err := nh.SyncRemoveData(ctx, shard, replica)
		if err == nil {
			dirs, err := filepath.Glob(filepath.Join(raftDir, "*", "*", "snapshot-part-*", fmt.Sprintf("snapshot-%d-%d", shard, replica)))
			for _, d := range dirs {
				err = errors.Join(err, os.RemoveAll(d))
			}
			return err
		}
		if !errors.Is(err, dragonboat.ErrShardNotStopped) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// snapshotMetadata is the record dragonboat keeps beside an exported
// snapshot's file (internal/server/snapshotenv.go MetadataFilename): an
// 8-byte hash, the second half of the MD5 of what follows, then the
// marshalled pb.Snapshot (internal/fileutil/utils.go CreateFlagFile).
const snapshotMetadata = "snapshot.metadata"

// asOnlyVoter rewrites the membership recorded with the exported snapshot
// in dir: the replica self (at addr) its only voter, the lost nodes
// removed, every other member out of it — a survivor left among the
// non-voting members or voters would be made removed by the import, and a
// removed replica id never comes back; out of the membership, it rejoins.
// It refuses when the voters not named lost are a majority: the quorum
// is not lost.
func asOnlyVoter(dir string, self uint64, addr string, lost []slotstore.NodeID) error {
	p := filepath.Join(dir, snapshotMetadata)
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("cluster: the exported snapshot's record: %w", err)
	}
	if len(b) < 8 {
		return errors.New("cluster: the exported snapshot's record is truncated")
	}
	if sum := md5.Sum(b[8:]); string(sum[8:]) != string(b[:8]) {
		return errors.New("cluster: the exported snapshot's record does not match its hash")
	}
	var ss pb.Snapshot
	if err := ss.Unmarshal(b[8:]); err != nil {
		return fmt.Errorf("cluster: the exported snapshot's record: %w", err)
	}
	m := ss.Membership
	var held []uint64
	for id := range m.Addresses {
		if !slices.Contains(lost, slotstore.NodeID(id)) {
			held = append(held, id)
		}
	}
	if 2*len(held) > len(m.Addresses) {
		slices.Sort(held)
		return fmt.Errorf("cluster: voters %v are not named lost: a majority of the controller's %d voters; start them instead", held, len(m.Addresses))
	}
	removed := maps.Clone(m.Removed)
	if removed == nil {
		removed = map[uint64]bool{}
	}
	for _, id := range lost {
		if _, voter := m.Addresses[uint64(id)]; voter {
			removed[uint64(id)] = true
		}
		if _, learner := m.NonVotings[uint64(id)]; learner {
			removed[uint64(id)] = true
		}
	}
	delete(removed, self)
	ss.Membership = pb.Membership{ConfigChangeId: m.ConfigChangeId, Addresses: map[uint64]string{self: addr},
		NonVotings: map[uint64]string{}, Witnesses: map[uint64]string{}, Removed: removed}
	data, err := ss.Marshal()
	if err != nil {
		return err
	}
	sum := md5.Sum(data)
	return os.WriteFile(p, append(sum[8:], data...), 0o600)
}
