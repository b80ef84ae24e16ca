package ctl

import (
	"github.com/slotmeta/slotmeta/client"
)

// balancer status: GET /v1/cluster/balancer — paused or not, the load per
// node, the last plan and the operator pins.
func balancerStatus(c *cmd) int {
	if _, code, ok := c.parse(); !ok {
		return code
	}
	r, err := c.api.GetBalancerWithResponse(c.ctx)
	return reply(c, r, err, func(t *table) { balancerTable(t, r.JSON200) })
}

func balancerTable(t *table, b *client.BalancerStatus) {
	t.header("ENABLED", "PAUSED", "INTERVAL_MS", "LAST_ROUND", "AGGREGATOR", "PINNED_GROUPS", "DRAINS", "HELD")
	t.row(b.Enabled, b.Paused, b.IntervalMs, msPtr(b.LastRoundAtMs), b.Aggregator, len(b.Pins), len(b.Drains), deref(b.LastPlan.Held))
	if len(b.Pins) > 0 {
		t.row()
		t.header("PINNED_GROUP", "WHY", "AT", "UNTIL")
		for _, p := range b.Pins {
			t.row(p.Group, p.Why, ms(p.AtMs), ms(p.UntilMs))
		}
	}
}

// balancer pause / balancer resume: PUT /v1/cluster/balancer {"paused":…}
// (drains go on while it is paused).
func balancerPause(c *cmd) int  { return setBalancer(c, client.BalancerRequest{Paused: ptr(true)}) }
func balancerResume(c *cmd) int { return setBalancer(c, client.BalancerRequest{Paused: ptr(false)}) }

// balancer release GROUP...: PUT /v1/cluster/balancer {"release_pins":[…]},
// the balancer may move those groups again before their pins run out.
func balancerRelease(c *cmd) int {
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	var groups []int64
	for _, p := range pos {
		g, code, ok := c.number("GROUP", p, maxGroup)
		if !ok {
			return code
		}
		groups = append(groups, g)
	}
	return setBalancer(c, client.BalancerRequest{ReleasePins: &groups})
}

func setBalancer(c *cmd, req client.BalancerRequest) int {
	if req.ReleasePins == nil {
		if _, code, ok := c.parse(); !ok {
			return code
		}
	}
	r, err := c.api.SetBalancerWithResponse(c.ctx, req, c.idempotent)
	return reply(c, r, err, func(t *table) { balancerTable(t, r.JSON200) })
}

// balancer plan: GET /v1/cluster/balancer/plan — what the balancer would do
// now, nothing done.
func balancerPlan(c *cmd) int {
	if _, code, ok := c.parse(); !ok {
		return code
	}
	r, err := c.api.GetBalancerPlanWithResponse(c.ctx)
	return reply(c, r, err, func(t *table) {
		p := r.JSON200
		t.header("KIND", "REASON", "GROUP", "FROM", "TO", "TO_GROUP", "HASH_SLOT", "DETAIL")
		for _, a := range p.Actions {
			t.row(a.Kind, a.Reason, a.Group, deref(a.FromNode), deref(a.ToNode), deref(a.ToGroup), deref(a.HashSlot), a.Detail)
		}
		if len(p.Actions) == 0 {
			t.row("nothing to do")
		}
		if p.Held != nil && *p.Held != "" {
			t.row("held: " + *p.Held)
		}
	})
}

// msPtr is ms of an optional time ("" when absent).
func msPtr(v *int64) string {
	if v == nil {
		return ""
	}
	return ms(*v)
}
