package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

// MinVersionFile, in a node's data directory, holds the highest cluster
// version the node has seen recorded (as CockroachDB's STORAGE_MIN_VERSION):
// its data may hold what that version allows, so no binary older than it
// may open the directory. Absent: a node that never saw one (a new
// directory, or one last run by a release before cluster versions).
const MinVersionFile = "MIN_VERSION"

// readMinVersion reads the data directory's minimum version (zero when
// there is none).
func readMinVersion(dir string) (slotstore.Version, error) {
	p := filepath.Join(dir, MinVersionFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return slotstore.Version{}, nil
	}
	if err != nil {
		return slotstore.Version{}, fmt.Errorf("cluster: %w", err)
	}
	v, err := slotstore.ParseVersion(strings.TrimSpace(string(b)))
	if err != nil {
		return slotstore.Version{}, fmt.Errorf("cluster: %s: %w", p, err)
	}
	return v, nil
}

// checkMinVersion returns the data directory's minimum version, or refuses
// one above the binary's, before anything in it is opened or written: the
// message names both versions and what to do.
func checkMinVersion(dir string) (slotstore.Version, error) {
	min, err := readMinVersion(dir)
	if err != nil {
		return min, err
	}
	if !min.IsZero() && clusterversion.Binary.Less(min) {
		return min, fmt.Errorf("cluster: the data in %s was written by a cluster at version %s; this binary runs %s and cannot read it safely. "+
			"Start this node with a %s (or newer) binary: a downgrade past a cluster version that every node reached is not possible "+
			"(to go back, restore a backup taken before the upgrade; docs/runbook.md, \"Upgrades and rollbacks\")",
			dir, min, clusterversion.Binary, min)
	}
	return min, nil
}

// recordMinVersion raises the data directory's minimum version to v
// (synced, whole or not at all); a lower or equal v leaves it be.
func recordMinVersion(dir string, v slotstore.Version) error {
	cur, err := readMinVersion(dir)
	if err != nil {
		return err
	}
	if !cur.Less(v) {
		return nil
	}
	if err := backup.WriteFile(dir, MinVersionFile, []byte(v.String()+"\n")); err != nil {
		return fmt.Errorf("cluster: record the cluster version %s: %w", v, err)
	}
	return nil
}

// recordClusterVersion keeps the cluster version st records in the data
// directory once it rises (before the node acts on the state that raised
// it further than this), so that an older binary refuses the directory.
// A version above the binary's own is a cluster this node should never
// have been part of: said loudly (the leader records only versions every
// node reported running).
func (f follower) recordClusterVersion(st *controller.State) {
	n := f.n
	if st.ClusterVersion.IsZero() || !n.minVersion.Less(st.ClusterVersion) {
		return
	}
	if err := recordMinVersion(n.cfg.DataDir, st.ClusterVersion); err != nil {
		n.cfg.Logger.Error("could not record the cluster version in the data directory", "version", st.ClusterVersion, "err", err)
		return
	}
	n.minVersion = st.ClusterVersion
	n.cfg.Logger.Info("cluster version recorded in the data directory: older binaries refuse it from now on", "version", st.ClusterVersion)
	if clusterversion.Binary.Less(st.ClusterVersion) {
		n.cfg.Logger.Error("the cluster version is above this binary's: this node must run a newer binary",
			"cluster_version", st.ClusterVersion, "binary", clusterversion.Binary)
	}
}
