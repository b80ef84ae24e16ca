package cluster

import (
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/restore"
)

// TestFoundedAsLaidOut: a restored node starts replicas only in a cluster
// founded from its own restore's backup, bump and replication factor —
// a node restored with other options holds other groups than the founding
// places on it.
func TestFoundedAsLaidOut(t *testing.T) {
	seed := &restore.Seed{ReplicationFactor: 3, Members: make([]controller.Node, 4),
		Controller: controller.Restore{BackupID: "b1", RouteRevision: 1_000_000_009}}
	st := &controller.State{ReplicationFactor: 3, Restored: &controller.Restored{BackupID: "b1", RouteRevision: 1_000_000_009}}
	if err := foundedAsLaidOut(seed, st); err != nil {
		t.Fatal(err)
	}
	if err := foundedAsLaidOut(nil, &controller.State{}); err != nil {
		t.Fatalf("a node that was not restored: %v", err)
	}
	for name, spoil := range map[string]func(*controller.State){
		"founded new": func(s *controller.State) { s.Restored = nil },
		"another backup": func(s *controller.State) {
			s.Restored = &controller.Restored{BackupID: "b2", RouteRevision: 1_000_000_009}
		},
		"another bump":           func(s *controller.State) { s.Restored = &controller.Restored{BackupID: "b1", RouteRevision: 9} },
		"another replication rf": func(s *controller.State) { s.ReplicationFactor = 1 },
	} {
		other := *st
		spoil(&other)
		if err := foundedAsLaidOut(seed, &other); err == nil || !strings.Contains(err.Error(), "restore every node with the same backup") {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
