package controller

import "github.com/slotmeta/slotmeta/internal/slotstore"

// The one place where the controller's records (records.go) become the
// API's types and back. Records with the same fields convert directly; a
// task maps its history and cursor field by field.

// Info is n as the API shows it.
func (n *Node) Info() slotstore.NodeInfo { return slotstore.NodeInfo(*n) }

// NodeOf is the record of a node the API describes.
func NodeOf(info slotstore.NodeInfo) Node { return Node(info) }

// API is t as the API shows it.
func (t *Task) API() slotstore.Task {
	out := slotstore.Task{ID: t.ID, Kind: t.Kind, Group: t.Group, From: t.From, To: t.To, HashSlot: t.HashSlot, ToGroup: t.ToGroup,
		HashSlots: t.HashSlots, Moved: t.Moved, Live: t.Live, CopiedTo: t.CopiedTo, SnapshotBytes: t.SnapshotBytes, OldReplicaID: t.OldReplicaID, NewReplicaID: t.NewReplicaID,
		Phase: t.Phase, Status: t.Status, Attempt: t.Attempt, Error: t.Error, CreatedAtMs: t.CreatedAtMs, UpdatedAtMs: t.UpdatedAtMs,
		History: make([]slotstore.PhaseRecord, len(t.History))}
	if t.Cursor != nil {
		c := slotstore.ChangeCursor(*t.Cursor)
		out.Cursor = &c
	}
	for i, r := range t.History {
		out.History[i] = slotstore.PhaseRecord(r)
	}
	return out
}

// API is d as the API shows it.
func (d Decision) API() slotstore.Decision { return slotstore.Decision(d) }

// DecisionOf is the record of a decision.
func DecisionOf(d slotstore.Decision) Decision { return Decision(d) }

// API is a as the API shows it.
func (a AuditRecord) API() slotstore.AuditRecord { return slotstore.AuditRecord(a) }

// AuditOf is the record of an admin action.
func AuditOf(a slotstore.AuditRecord) AuditRecord { return AuditRecord(a) }

// TasksAPI is every kept task as the API shows it, newest first.
func (s *State) TasksAPI() []slotstore.Task {
	tasks := s.TasksNewestFirst()
	out := make([]slotstore.Task, len(tasks))
	for i := range tasks {
		out[i] = tasks[i].API()
	}
	return out
}

// DecisionsAPI is the decision log as the API shows it, oldest first.
func (s *State) DecisionsAPI() []slotstore.Decision {
	out := make([]slotstore.Decision, len(s.Decisions))
	for i, d := range s.Decisions {
		out[i] = d.API()
	}
	return out
}

// AuditAPI is the audit trail as the API shows it, oldest first.
func (s *State) AuditAPI() []slotstore.AuditRecord {
	out := make([]slotstore.AuditRecord, len(s.Audit))
	for i, a := range s.Audit {
		out[i] = a.API()
	}
	return out
}
