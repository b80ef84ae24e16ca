package controller

import (
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestAuditTrail: records get sequence numbers and the command's time, are
// cut to their bounds, the trail keeps the newest MaxAudit, and a snapshot
// taken before further records does not see them (the copy shares records
// but not the slice).
func TestAuditTrail(t *testing.T) {
	s := NewStateMachine(func(*State) {})
	long := strings.Repeat("x", 2*slotstore.AuditMaxDetail)
	r := update(t, s, 1, command(t, Command{Audit: &AuditRecord{Who: "ops-alice", Role: "admin", Action: "POST /v1/cluster/nodes/{id}/drain",
		Target: "/v1/cluster/nodes/3/drain", Outcome: slotstore.AuditOK, Status: 202, Detail: long, Seq: 99}}))
	if !r.OK || r.TaskID != 1 {
		t.Fatalf("first record: %+v", r)
	}
	before := s.Snapshot()
	got := before.Audit[0]
	if got.Seq != 1 || got.AtMs != 2000 || got.Who != "ops-alice" || len(got.Detail) > slotstore.AuditMaxDetail+len("…") {
		t.Fatalf("recorded: %+v", got)
	}
	for i := range MaxAudit + 5 {
		update(t, s, uint64(2+i), command(t, Command{Audit: &AuditRecord{Who: "bot", Action: "PUT /v1/cluster/balancer"}}))
	}
	after := s.Snapshot()
	if len(after.Audit) != MaxAudit || after.AuditSeq != MaxAudit+6 || after.Audit[len(after.Audit)-1].Seq != MaxAudit+6 ||
		after.Audit[0].Seq != 7 {
		t.Fatalf("bounded trail: %d records, seq %d, first %d", len(after.Audit), after.AuditSeq, after.Audit[0].Seq)
	}
	if len(before.Audit) != 1 || before.Audit[0].Who != "ops-alice" {
		t.Fatalf("an earlier snapshot changed: %+v", before.Audit)
	}
}
