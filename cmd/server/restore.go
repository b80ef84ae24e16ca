package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/slotmeta/slotmeta/internal/engine/restore"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// restoreUsage is `slotmeta restore -h`.
const restoreUsage = `Usage:
  slotmeta restore --from BACKUP_DIR [--new-cluster-id ID] [--bump N] [node flags]

Lays this node's data directory out from a backup (package restore): run it
once on every founding member of the new cluster, each with the node flags it
will run with — --node-id, --data-dir, --raft-addr, --api-addr, --peer-addr,
--initial-members, --replication-factor (SLOTMETA_* as for a node) — then
start the nodes with those flags. The backup is verified whole first; the data
directory must be absent or empty. Nothing is written when it is refused.

  --from DIR            the backup's directory (the one holding manifest.json)
  --new-cluster-id ID   the restored cluster's id (default <old id>-restored-<backup id>);
                        the same on every node
  --bump N              how far revisions and change-log positions move past the
                        backed-up ones (default 1000000000); the same on every node
`

// runRestore runs `slotmeta restore …`: 0 on success, 2 for a usage error,
// 1 when the restore was refused or failed.
func runRestore(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	a, code, ok := tool{name: "restore", usage: restoreUsage, valued: []string{"from", "new-cluster-id", "bump"}}.parse(args, getenv, stdout, stderr)
	if !ok {
		return code
	}
	from, clusterID, o := a.values["from"], a.values["new-cluster-id"], a.node
	var bump uint64
	if v, ok := a.values["bump"]; ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			fmt.Fprintf(stderr, "slotmeta restore: --bump %q: a positive number\n", v)
			return 2
		}
		bump = n
	}
	if from == "" {
		fmt.Fprint(stderr, "slotmeta restore: --from is needed\n\n"+restoreUsage)
		return 2
	}
	members, err := o.members()
	if err == nil && len(members) == 0 {
		err = errors.New("a restored cluster is founded anew: --join does not apply")
	}
	if err != nil {
		fmt.Fprintln(stderr, "slotmeta restore:", err)
		return 2
	}
	seed, err := restore.Layout(ctx, restore.Options{From: from, DataDir: o.DataDir, NodeID: slotstore.NodeID(o.NodeID),
		Members: members, ReplicationFactor: o.ReplicationFactor, ClusterID: clusterID, Bump: bump})
	if err != nil {
		fmt.Fprintln(stderr, "slotmeta restore:", err)
		return 1
	}
	groups := make([]string, len(seed.Starts))
	for i, s := range seed.Starts {
		groups[i] = strconv.FormatUint(uint64(s.Group), 10)
	}
	fmt.Fprintf(stdout, "restored backup %s of cluster %s into %s: node %d of cluster %s, groups %s (%d of %d)\n",
		seed.Controller.BackupID, seed.Controller.FromCluster, o.DataDir, seed.NodeID, seed.ClusterID,
		strings.Join(groups, ","), len(seed.Starts), len(seed.Controller.Groups))
	fmt.Fprintln(stdout, "start the node with the same flags (every founding member restored first)")
	return 0
}
