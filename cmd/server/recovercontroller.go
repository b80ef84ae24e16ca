package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// recoverControllerUsage is `slotmeta recover-controller -h`.
const recoverControllerUsage = `Usage:
  slotmeta recover-controller [node flags]
  slotmeta recover-controller --accept-data-loss --lost IDS [node flags]
  slotmeta recover-controller --rejoin --base ID --lost IDS [node flags]

Recovers the controller group after it lost a majority of its voters for good
(docs/runbook.md). Every surviving node is stopped first; run this with each
node's own flags (--node-id, --data-dir, --raft-addr, …).

  (no mode)            prints what this node's controller replica holds (its
                       role, term, commit, applied and last log index): run it
                       on every survivor and pick the one with the highest
                       commit as the base
  --accept-data-loss   on the base: rebuilds the controller from its replica,
                       itself the only voter; commands it logged past its
                       commit are applied when it starts, the lost nodes removed
  --rejoin             on every other survivor: its controller replica is
                       removed and the node rejoins through the base
  --base ID            the base's node id (with --rejoin)
  --lost IDS           the nodes lost for good, comma-separated

Then start the base, then the others, with their usual flags; recover each
data group that lost its quorum (ctl group recover ID --accept-data-loss).
`

// runRecoverController runs `slotmeta recover-controller …`: 0 on success,
// 2 for a usage error, 1 when refused or failed. It prints the report as
// JSON on stdout.
func runRecoverController(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	a, code, ok := tool{name: "recover-controller", usage: recoverControllerUsage,
		valued: []string{"base", "lost"}, bools: []string{"accept-data-loss", "rejoin"}}.parse(args, getenv, stdout, stderr)
	if !ok {
		return code
	}
	o := cluster.ControllerRecovery{AcceptDataLoss: a.set["accept-data-loss"], Rejoin: a.set["rejoin"]}
	if v, ok := a.values["lost"]; ok {
		for _, f := range strings.Split(v, ",") {
			id, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil || id == 0 {
				fmt.Fprintf(stderr, "slotmeta recover-controller: --lost %q: node ids, comma-separated\n", v)
				return 2
			}
			o.Lost = append(o.Lost, slotstore.NodeID(id))
		}
	}
	if v, ok := a.values["base"]; ok {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil || id == 0 {
			fmt.Fprintf(stderr, "slotmeta recover-controller: --base %q: a node id\n", v)
			return 2
		}
		o.Base = slotstore.NodeID(id)
	}
	opts := a.node
	p, err := opts.plan(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "slotmeta recover-controller:", err)
		return 2
	}
	rep, err := cluster.RecoverController(ctx, p.cluster, o)
	if err != nil {
		fmt.Fprintln(stderr, "slotmeta recover-controller:", err)
		return 1
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Fprintf(stdout, "%s\n", b)
	switch rep.Done {
	case "recovered":
		fmt.Fprintln(stderr, "start this node with its usual flags, then every rejoining survivor")
	case "rejoins":
		fmt.Fprintf(stderr, "start this node with its usual flags once node %d runs\n", o.Base)
	}
	return 0
}
