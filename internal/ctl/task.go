package ctl

import (
	"math"

	"github.com/slotmeta/slotmeta/client"
)

// task list: GET /v1/cluster/tasks, newest first.
func taskList(c *cmd) int {
	if _, code, ok := c.parse(); !ok {
		return code
	}
	r, err := c.api.ListTasksWithResponse(c.ctx)
	return reply(c, r, err, func(t *table) {
		taskHeader(t)
		for i := range r.JSON200.Items {
			taskRow(t, &r.JSON200.Items[i])
		}
	})
}

func taskHeader(t *table) {
	t.header("ID", "KIND", "GROUP", "PHASE", "STATUS", "FROM", "TO", "TO_GROUP", "HASH_SLOT", "ATTEMPT", "UPDATED", "ERROR")
}

func taskRow(t *table, k *client.Task) {
	t.row(k.Id, k.Kind, k.Group, k.Phase, k.Status, k.FromNode, k.ToNode, k.ToGroup, k.HashSlot, k.Attempt, ms(k.UpdatedAtMs), k.Error)
}

// task get ID: GET /v1/cluster/tasks/{id}; the table adds its phases.
func taskGet(c *cmd) int {
	id, _, code, ok := c.parseID("ID", math.MaxInt64)
	if !ok {
		return code
	}
	r, err := c.api.GetTaskWithResponse(c.ctx, id)
	return reply(c, r, err, func(t *table) {
		k := r.JSON200
		taskHeader(t)
		taskRow(t, k)
		if k.History == nil || len(*k.History) == 0 {
			return
		}
		t.row()
		t.header("PHASE", "AT", "VOTERS", "LEARNERS", "CONFIG_CHANGE", "NOTE")
		for _, p := range *k.History {
			t.row(p.Phase, ms(p.AtMs), ids(p.Voters), ids(p.Learners), p.ConfigChangeId, p.Note)
		}
	})
}

// task cancel ID: POST /v1/cluster/tasks/{id}/cancel; the task, cancelling.
// Past the removal of the old voter it is refused (4).
func taskCancel(c *cmd) int {
	id, _, code, ok := c.parseID("ID", math.MaxInt64)
	if !ok {
		return code
	}
	r, err := c.api.CancelTaskWithResponse(c.ctx, id, c.idempotent)
	return reply(c, r, err, func(t *table) {
		taskHeader(t)
		taskRow(t, r.JSON200)
	})
}
