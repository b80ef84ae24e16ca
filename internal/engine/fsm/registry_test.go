package fsm

import (
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestEveryCommandHasAnApplierAndEveryQueryALookup: the registries are
// filled in two packages (meta's, per resource family, and registry.go's
// table here); a
// command that decodes but has no applier would be answered "cannot be
// applied" on every replica, and a query without a lookup would fail every
// read of it.
func TestEveryCommandHasAnApplierAndEveryQueryALookup(t *testing.T) {
	ops := meta.Ops()
	if len(ops) < 20 {
		t.Fatalf("only %d commands registered", len(ops))
	}
	for _, op := range ops {
		c, _ := meta.NewCommand(op)
		if _, slot := c.(meta.SlotCommand); slot {
			continue // applied by applySlotCommand
		}
		if _, parts := c.(*meta.SlotWrites); parts {
			continue // applied part by part (applySlotWrites)
		}
		if _, check := c.(*meta.CheckState); check {
			continue // group-level, no slot: applyCheck
		}
		if _, ok := appliers[op]; !ok {
			t.Errorf("command op %d (%T) has no applier", op, c)
		}
	}
	for op := range appliers {
		if _, ok := meta.NewCommand(op); !ok && op != meta.OpNoop {
			t.Errorf("applier for op %d, which no command registers", op)
		}
	}
	kinds := meta.QueryKinds()
	if len(kinds) < 10 {
		t.Fatalf("only %d queries registered", len(kinds))
	}
	for _, k := range kinds {
		if _, ok := lookups[k]; !ok {
			t.Errorf("query kind %d has no lookup", k)
		}
	}
	for k := range lookups {
		found := false
		for _, q := range kinds {
			found = found || q == k
		}
		if !found {
			t.Errorf("lookup for query kind %d, which no query registers", k)
		}
	}
}
