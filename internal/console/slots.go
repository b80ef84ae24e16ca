package console

import (
	"context"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// slotPages serves the hash-slot map: each slot's group and leader, and the
// slots migrating.
type slotPages struct{ *console }

func (c slotPages) slots(ctx context.Context) SlotsProps {
	p := SlotsProps{Now: c.now()}
	groups, err := c.src.Groups(ctx)
	if err != nil {
		p.Err = errMessage(err)
	}
	leaders := map[slotstore.GroupID]slotstore.NodeID{}
	for _, g := range groups {
		leaders[g.ID] = g.Leader
	}
	migrating := map[slotstore.HashSlot]slotstore.Task{}
	for _, t := range c.src.Tasks() {
		if t.Kind == "slot_migration" && t.HashSlot != nil && (t.Status == "running" || t.Status == "cancelling") {
			migrating[*t.HashSlot] = t
		}
	}
	m := c.src.SlotMap()
	count := map[slotstore.GroupID]int{}
	for i, g := range m {
		cell := SlotCell{Slot: slotstore.HashSlot(i), Group: g, Leader: leaders[g]}
		if t, ok := migrating[cell.Slot]; ok {
			cell.Migrating, cell.MigratingTo, cell.TaskID = true, t.ToGroup, t.ID
		}
		p.Cells = append(p.Cells, cell)
		count[g]++
	}
	for _, g := range groups {
		p.Legend = append(p.Legend, LegendItem{Group: g.ID, Leader: g.Leader, Slots: count[g.ID]})
	}
	return p
}

func (c slotPages) slotsPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Hash slots", "slots", SlotsBody(c.slots(r.Context())))
}

func (c slotPages) slotsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, SlotGrid(c.slots(r.Context())))
}
