package ctl

import (
	"math"
	"strings"

	"github.com/slotmeta/slotmeta/client"
)

// cluster status: GET /v1/cluster, as the answering node sees it.
func clusterStatus(c *cmd) int {
	if _, code, ok := c.parse(); !ok {
		return code
	}
	r, err := c.api.GetClusterWithResponse(c.ctx)
	code := reply(c, r, err, func(t *table) {
		s := r.JSON200
		t.header("CLUSTER", "NODE", "CONTROLLER", "NODES", "GROUPS", "WITH_LEADER", "ROUTE_REVISION", "CLUSTER_VERSION", "NODE_VERSION", "READY", "NOT_READY_REASON")
		t.row(s.ClusterId, s.NodeId, s.ControllerLeader, s.Nodes, s.Groups, s.GroupsWithLeader, s.RouteRevision, s.ClusterVersion, s.Version, s.Ready, s.NotReadyReason)
	})
	// A cluster that is not ready is not a success, for scripts: 5, as a
	// 503 would be (the summary is shown all the same).
	if code == exitOK && !r.JSON200.Ready {
		return exitUnavailable
	}
	return code
}

// node list: GET /v1/cluster/nodes.
func nodeList(c *cmd) int {
	if _, code, ok := c.parse(); !ok {
		return code
	}
	r, err := c.api.ListNodesWithResponse(c.ctx)
	return reply(c, r, err, func(t *table) {
		nodeHeader(t)
		for i := range r.JSON200.Items {
			nodeRow(t, &r.JSON200.Items[i])
		}
	})
}

func nodeHeader(t *table) {
	t.header("ID", "STATE", "HEALTH", "VERSION", "ROLES", "API", "RAFT", "PEER")
}

func nodeRow(t *table, n *client.Node) {
	var roles []string
	if n.Roles != nil {
		for _, r := range *n.Roles {
			roles = append(roles, string(r))
		}
	}
	t.row(n.Id, n.State, n.Health, n.Version, strings.Join(roles, ","), n.ApiAddr, n.RaftAddr, n.PeerAddr)
}

// node drain ID: POST /v1/cluster/nodes/{id}/drain; the node, draining.
// Its progress: node drain-status.
func nodeDrain(c *cmd) int {
	id, _, code, ok := c.parseID("ID", math.MaxInt64)
	if !ok {
		return code
	}
	r, err := c.api.DrainNodeWithResponse(c.ctx, id, c.idempotent)
	return reply(c, r, err, func(t *table) {
		nodeHeader(t)
		nodeRow(t, r.JSON202)
	})
}

// node drain-status [ID]: the drains of GET /v1/cluster/balancer (of node
// ID). With -o json: {"drains":[DrainProgress…]}; a node that is not
// draining is not found (3).
func nodeDrainStatus(c *cmd) int {
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	var id int64
	if len(pos) == 1 {
		if id, code, ok = c.number("ID", pos[0], math.MaxInt64); !ok {
			return code
		}
	}
	r, err := c.api.GetBalancerWithResponse(c.ctx)
	if _, code, ok := answered(c, r, err); !ok {
		return code
	}
	drains := []client.DrainProgress{}
	for _, d := range r.JSON200.Drains {
		if id == 0 || d.Node == id {
			drains = append(drains, d)
		}
	}
	if id != 0 && len(drains) == 0 {
		return c.fail(errorf(client.ErrorCodeNotFound, "node %d is not draining", id))
	}
	return c.showValue(map[string]any{"drains": drains}, func(t *table) {
		t.header("NODE", "STARTED", "REPLICAS_AT_START", "REPLICAS_LEFT", "LEADERS_LEFT", "PERCENT", "ESTIMATED_LEFT_S", "DONE")
		for _, d := range drains {
			left := "-"
			if d.EstimatedLeftMs >= 0 {
				left = cell((d.EstimatedLeftMs + 999) / 1000)
			}
			t.row(d.Node, ms(d.StartedAtMs), d.ReplicasAtStart, d.ReplicasLeft, d.LeadersLeft, d.Percent, left, d.Done)
		}
	})
}

// route list: GET /v1/cluster/routes, one row per hash slot.
func routeList(c *cmd) int {
	if _, code, ok := c.parse(); !ok {
		return code
	}
	r, err := c.api.GetRoutesWithResponse(c.ctx)
	return reply(c, r, err, func(t *table) {
		t.header("HASH_SLOT", "GROUP", "LEADER", "TERM", "CONFIG_EPOCH")
		for _, s := range r.JSON200.HashSlots {
			t.row(s.HashSlot, s.Group, s.LeaderNode, s.LeaderTerm, s.ConfigEpoch)
		}
	})
}

// route resolve KEY...: POST /v1/cluster/routes/resolve, under one revision.
func routeResolve(c *cmd) int {
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	r, err := c.api.ResolveRoutesWithResponse(c.ctx, client.ResolveRequest{Keys: pos})
	return reply(c, r, err, func(t *table) {
		t.header("KEY", "HASH_SLOT", "GROUP", "LEADER", "TERM", "CONFIG_EPOCH", "READY", "ERROR")
		for _, k := range r.JSON200.Routes {
			t.row(k.Key, k.HashSlot, k.Group, k.LeaderNode, k.LeaderTerm, k.ConfigEpoch, k.Ready, k.Error)
		}
	})
}

// audit [--limit N] [--before SEQ]: GET /v1/cluster/audit, newest first.
func auditList(c *cmd) int {
	limit := c.fs.Int("limit", 100, "at most `N` records (1–1000)")
	before := c.fs.Int64("before", 0, "records below sequence number `SEQ` (a page's next_before)")
	if _, code, ok := c.parse(); !ok {
		return code
	}
	if *limit < 1 || *limit > 1000 || *before < 0 {
		return c.usageError("--limit takes 1 to 1000, --before a sequence number")
	}
	params := client.ListAuditParams{Limit: limit}
	if *before > 0 {
		params.Before = before
	}
	r, err := c.api.ListAuditWithResponse(c.ctx, &params)
	return reply(c, r, err, func(t *table) {
		t.header("SEQ", "AT", "WHO", "ROLE", "VIA", "NODE", "ACTION", "TARGET", "OUTCOME", "STATUS")
		for _, a := range r.JSON200.Items {
			t.row(a.Seq, ms(a.AtMs), a.Who, a.Role, a.Via, a.Node, a.Action, a.Target, a.Outcome, a.Status)
		}
	})
}

// node remove ID: DELETE /v1/cluster/nodes/{id} — a drained node leaves
// the cluster for good (refused while it holds replicas).
func nodeRemove(c *cmd) int {
	id, _, code, ok := c.parseID("ID", math.MaxInt64)
	if !ok {
		return code
	}
	r, err := c.api.RemoveNodeWithResponse(c.ctx, id, c.idempotent)
	if _, code, ok := answered(c, r, err); !ok {
		return code
	}
	return c.showValue(map[string]any{"node": id, "removed": true}, func(t *table) {
		t.header("NODE", "REMOVED")
		t.row(id, true)
	})
}
