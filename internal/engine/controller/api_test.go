package controller

import (
	"reflect"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestRecordsMapEveryFieldToTheAPI: a record with every field set maps to
// an API value with every field set — a field added to both sides but
// left out of the mapping (api.go) fails here; one added to one side only
// stops the direct conversions from compiling.
func TestRecordsMapEveryFieldToTheAPI(t *testing.T) {
	hs := slotstore.HashSlot(7)
	task := Task{ID: 1, Kind: TaskSlotMigration, Group: 2, From: 3, To: 4, HashSlot: &hs, ToGroup: 5, HashSlots: []slotstore.HashSlot{7, 8},
		Moved: 1, Live: true, Cursor: &ChangeCursor{Index: 9, Seq: 2}, CopiedTo: []byte{1}, SnapshotBytes: 5, OldReplicaID: 6, NewReplicaID: 7, Phase: PhaseCopy,
		Status: TaskRunning, Attempt: 2, Error: "e", CreatedAtMs: 1, UpdatedAtMs: 2,
		History: []PhaseRecord{{Phase: PhaseFence, AtMs: 1, Voters: []uint64{1}, Learners: []uint64{2}, ConfigChangeID: 3, Note: "n"}}}
	allSet(t, "task", reflect.ValueOf(task))
	api := task.API()
	allSet(t, "task.API()", reflect.ValueOf(api))
	node := Node{ID: 1, RaftAddr: "r", APIAddr: "a", PeerAddr: "p", Roles: []slotstore.NodeRole{slotstore.RoleData}, State: NodeActive,
		JoinedAtMs: 1, DrainStartedAtMs: 2, DrainReplicas: 3}
	allSet(t, "node", reflect.ValueOf(node))
	if back := NodeOf(node.Info()); !reflect.DeepEqual(back, node) {
		t.Fatalf("node round trip: %+v", back)
	}
	d := Decision{Seq: 9, AtMs: 1, Group: 2, Kind: slotstore.DecisionTransfer, Reason: "r", Detail: "d", Leader: 3, Term: 4, PreferredLeader: 5,
		TargetLag: 6, TargetReportAge: 7, Observer: 8}
	allSet(t, "decision", reflect.ValueOf(d))
	if back := DecisionOf(d.API()); back != d {
		t.Fatalf("decision round trip: %+v", back)
	}
	a := AuditRecord{Seq: 1, AtMs: 2, Who: "w", Role: "r", Via: "v", Source: "s", Node: 3, Action: "a", Target: "t",
		Outcome: slotstore.AuditOK, Status: 200, Code: slotstore.CodeConflict, Detail: "d"}
	allSet(t, "audit record", reflect.ValueOf(a))
	if back := AuditOf(a.API()); back != a {
		t.Fatalf("audit round trip: %+v", back)
	}
}

// allSet fails t for every zero field of the struct v.
func allSet(t *testing.T, what string, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("%s: field %s is not set", what, v.Type().Field(i).Name)
		}
	}
}
