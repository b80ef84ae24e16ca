package ctl

import (
	"fmt"
	"math"

	"github.com/slotmeta/slotmeta/client"
)

// leader transfer GROUP NODE [--prefer]: POST
// /v1/cluster/groups/{id}/leader-transfer. The controller leader checks
// first; an unsafe transfer is refused (4) with its blockers on the error
// line. The reconciler moves a group's leadership back to its preferred
// leader: --prefer makes NODE the preferred leader first (PUT
// …/preferred-leader), so that it stays; without it, a transfer away from
// the preferred leader is done and said to be undone soon, on stderr.
func leaderTransfer(c *cmd) int {
	prefer := c.fs.Bool("prefer", false, "make NODE the group's preferred leader first, so that the reconciler keeps the leadership there")
	group, node, code, ok := c.parseGroupNode()
	if !ok {
		return code
	}
	if *prefer {
		p, err := c.api.SetPreferredLeaderWithResponse(c.ctx, group, client.PreferredLeaderRequest{Node: node}, c.idempotent)
		if _, code, ok := answered(c, p, err); !ok {
			return code
		}
	} else if g, err := c.api.GetGroupWithResponse(c.ctx, group); err == nil && g.JSON200 != nil &&
		g.JSON200.PreferredLeader != 0 && g.JSON200.PreferredLeader != node {
		fmt.Fprintf(c.s.stderr, "note: node %d is group %d's preferred leader: the reconciler moves the leadership back to it within about a minute and a half; add --prefer to keep it on node %d\n",
			g.JSON200.PreferredLeader, group, node)
	}
	r, err := c.api.TransferLeaderWithResponse(c.ctx, group, client.LeaderTransferRequest{TargetNode: node}, c.idempotent)
	return reply(c, r, err, func(t *table) {
		tr := r.JSON200
		t.header("GROUP", "PREVIOUS_LEADER", "LEADER", "TERM", "TOOK_MS")
		t.row(tr.Group, tr.PreviousLeader, tr.Leader, tr.Term, tr.TookMs)
	})
}

// leader prefer GROUP NODE: PUT /v1/cluster/groups/{id}/preferred-leader —
// the intent the reconciler moves the group's leadership toward when its
// checks pass.
func leaderPrefer(c *cmd) int {
	group, node, code, ok := c.parseGroupNode()
	if !ok {
		return code
	}
	r, err := c.api.SetPreferredLeaderWithResponse(c.ctx, group, client.PreferredLeaderRequest{Node: node}, c.idempotent)
	return reply(c, r, err, func(t *table) {
		g := r.JSON200
		t.header("GROUP", "PREFERRED_LEADER", "LEADER", "TERM")
		t.row(g.Id, g.PreferredLeader, g.Leader, g.Term)
	})
}

// parseGroupNode is parse for GROUP NODE.
func (c *cmd) parseGroupNode() (group, node int64, code int, ok bool) {
	group, pos, code, ok := c.parseID("GROUP", maxGroup)
	if !ok {
		return 0, 0, code, false
	}
	node, code, ok = c.number("NODE", pos[1], math.MaxInt64)
	return group, node, code, ok
}
