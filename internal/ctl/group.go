package ctl

import (
	"fmt"
	"math"

	"github.com/slotmeta/slotmeta/client"
)

// Group ids are uint32 in the API (1 to 4294967295).
const maxGroup = math.MaxUint32

// group list: GET /v1/cluster/groups.
func groupList(c *cmd) int {
	if _, code, ok := c.parse(); !ok {
		return code
	}
	r, err := c.api.ListGroupsWithResponse(c.ctx)
	return reply(c, r, err, func(t *table) {
		groupHeader(t)
		for i := range r.JSON200.Items {
			groupRow(t, &r.JSON200.Items[i])
		}
	})
}

func groupHeader(t *table) {
	t.header("ID", "HASH_SLOTS", "LEADER", "TERM", "PREFERRED", "VOTERS", "LEARNERS", "LIVE_VOTERS", "HEALTH", "CONFIG_EPOCH")
}

func groupRow(t *table, g *client.GroupView) {
	t.row(g.Id, g.HashSlots, g.Leader, g.Term, g.PreferredLeader, ids(g.Voters), ids(g.Learners), g.LiveVoters, g.Health, g.ConfigEpoch)
}

// group get ID: GET /v1/cluster/groups/{id}; the table adds its replicas.
func groupGet(c *cmd) int {
	id, _, code, ok := c.parseID("ID", maxGroup)
	if !ok {
		return code
	}
	r, err := c.api.GetGroupWithResponse(c.ctx, id)
	return reply(c, r, err, func(t *table) {
		g := r.JSON200
		groupHeader(t)
		groupRow(t, g)
		if g.Replicas == nil || len(*g.Replicas) == 0 {
			return
		}
		t.row()
		t.header("NODE", "REPLICA", "ROLE", "DESIRED", "LIVE", "APPLIED", "LAG", "HEARD_AGO_MS", "DISRUPTION")
		for _, rv := range *g.Replicas {
			t.row(rv.Node, rv.ReplicaId, rv.Role, rv.Desired, rv.Live, rv.AppliedIndex, rv.Lag, rv.HeardAgoMs, rv.Disruption)
		}
	})
}

// replica move GROUP --from N --to M: POST
// /v1/cluster/groups/{id}/replica-moves; the task, started. Follow it with
// task get.
func replicaMove(c *cmd) int {
	from := c.fs.Int64("from", 0, "the `NODE` whose replica moves (required)")
	to := c.fs.Int64("to", 0, "the `NODE` it moves to (required)")
	group, _, code, ok := c.parseID("GROUP", maxGroup)
	if !ok {
		return code
	}
	if *from < 1 || *to < 1 {
		return c.usageError("--from and --to are required: node ids")
	}
	r, err := c.api.CreateReplicaMoveWithResponse(c.ctx, group, client.ReplicaMoveRequest{FromNode: *from, ToNode: *to}, c.idempotent)
	return reply(c, r, err, func(t *table) {
		taskHeader(t)
		taskRow(t, r.JSON202)
	})
}

// group recover ID --accept-data-loss: POST /v1/cluster/groups/{id}/recover,
// the lost-quorum recovery (docs/runbook.md); the table is its report.
func groupRecover(c *cmd) int {
	accept := c.fs.Bool("accept-data-loss", false, "confirm that acknowledged writes may be lost (the report says which); required")
	id, _, code, ok := c.parseID("ID", maxGroup)
	if !ok {
		return code
	}
	if !*accept {
		return c.usageError("a lost-quorum recovery may lose acknowledged writes: --accept-data-loss is required")
	}
	r, err := c.api.RecoverGroupWithResponse(c.ctx, id, client.RecoverRequest{AcceptDataLoss: true})
	return reply(c, r, err, func(t *table) {
		rep := r.JSON200
		t.header("GROUP", "NODE", "REPLICA", "RECOVERED_INDEX", "HIGHEST_KNOWN", "MAY_BE_LOST", "LOST_FROM", "LOST_TO", "UNCERTAIN")
		uncertain := 0
		if rep.Uncertain != nil {
			uncertain = len(*rep.Uncertain)
		}
		t.row(rep.Group, rep.Node, rep.Replica, rep.RecoveredIndex, rep.HighestKnown, rep.MayBeLost, rep.LostFrom, rep.LostTo, uncertain)
		t.row()
		t.row(rep.Message)
	})
}

// groupCheck runs a state check of a group now: a row per replica, the
// verdict last; exit 4 when the replicas differ.
func groupCheck(c *cmd) int {
	id, _, code, ok := c.parseID("ID", maxGroup)
	if !ok {
		return code
	}
	r, err := c.api.CheckGroupWithResponse(c.ctx, id)
	code = reply(c, r, err, func(t *table) {
		k := r.JSON200
		t.header("NODE", "REPLICA", "AGREES", "ROWS", "BYTES", "DIGEST", "ERROR")
		if k.Replicas != nil {
			for _, rc := range *k.Replicas {
				t.row(rc.Node, rc.ReplicaId, rc.Agrees, rc.Rows, rc.Bytes, deref(rc.Digest), deref(rc.Error))
			}
		}
		t.row()
		t.row(fmt.Sprintf("group %d at index %d: %s", k.Group, k.Index, k.Verdict))
		if k.Differing != nil && len(*k.Differing) > 0 {
			t.row(fmt.Sprintf("hash slots that differ: %v (65535: the system records)", *k.Differing))
		}
		if k.Action != nil && *k.Action != "" {
			t.row(*k.Action)
		}
	})
	if code == exitOK && r.JSON200 != nil && (r.JSON200.Verdict == client.GroupCheckVerdictDiverged || r.JSON200.Verdict == client.GroupCheckVerdictNoMajority) {
		return exitConflict
	}
	return code
}

// deref is *p, or the zero value when p is nil (an optional field).
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// group create [--peers 1,2,3]: POST /v1/cluster/groups — a new, empty
// group (the controller chooses its nodes unless --peers); the task.
func groupCreate(c *cmd) int {
	peers := c.fs.String("peers", "", "the new group's `NODES`, comma-separated (default: the controller chooses)")
	if _, code, ok := c.parse(); !ok {
		return code
	}
	ids, code, ok := c.numbers("--peers", *peers, 1, math.MaxInt64)
	if !ok {
		return code
	}
	r, err := c.api.CreateGroupWithResponse(c.ctx, client.CreateGroupRequest{Peers: ids}, c.idempotent)
	return taskStarted(c, r, err, func() *client.Task { return r.JSON202 })
}

// group split ID [--slots 5,6,7] [--peers 1,2,3]: POST
// /v1/cluster/groups/{id}/split — the slots (default: the upper half) move
// into a new group; the task.
func groupSplit(c *cmd) int {
	slots := c.fs.String("slots", "", "the `HASH_SLOTS` to move into the new group, comma-separated (default: the upper half)")
	peers := c.fs.String("peers", "", "the new group's `NODES`, comma-separated (default: the controller chooses)")
	id, _, code, ok := c.parseID("ID", maxGroup)
	if !ok {
		return code
	}
	hs, code, ok := c.numbers("--slots", *slots, 0, 255)
	if !ok {
		return code
	}
	ids, code, ok := c.numbers("--peers", *peers, 1, math.MaxInt64)
	if !ok {
		return code
	}
	req := client.SplitRequest{Peers: ids}
	if hs != nil {
		s := make([]int, len(*hs))
		for i, v := range *hs {
			s[i] = int(v)
		}
		req.HashSlots = &s
	}
	r, err := c.api.SplitGroupWithResponse(c.ctx, id, req, c.idempotent)
	return taskStarted(c, r, err, func() *client.Task { return r.JSON202 })
}

// group merge ID --into GROUP: POST /v1/cluster/groups/{id}/merge — every
// slot of ID moves into GROUP, then ID is retired; the task.
func groupMerge(c *cmd) int {
	into := c.fs.Int64("into", 0, "the `GROUP` that receives the slots (required)")
	id, _, code, ok := c.parseID("ID", maxGroup)
	if !ok {
		return code
	}
	if *into < 1 || *into > maxGroup {
		return c.usageError("--into is required: a group id")
	}
	r, err := c.api.MergeGroupWithResponse(c.ctx, id, client.MergeRequest{Into: *into}, c.idempotent)
	return taskStarted(c, r, err, func() *client.Task { return r.JSON202 })
}

// group retire ID: DELETE /v1/cluster/groups/{id} — an empty group goes.
func groupRetire(c *cmd) int {
	id, _, code, ok := c.parseID("ID", maxGroup)
	if !ok {
		return code
	}
	r, err := c.api.RetireGroupWithResponse(c.ctx, id, c.idempotent)
	if _, code, ok := answered(c, r, err); !ok {
		return code
	}
	return c.showValue(map[string]any{"group": id, "retired": true}, func(t *table) {
		t.header("GROUP", "RETIRED")
		t.row(id, true)
	})
}

// taskStarted shows the task a command started (202).
func taskStarted[R any](c *cmd, r *R, err error, task func() *client.Task) int {
	return reply(c, r, err, func(t *table) {
		taskHeader(t)
		taskRow(t, task())
	})
}
