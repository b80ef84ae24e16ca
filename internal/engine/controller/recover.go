package controller

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Lost-quorum recovery (issue 29): a group that lost a majority of its
// replicas for good is rebuilt from one surviving replica. The survivor's
// node first prepares its replica (stopped, its own log's tail applied,
// its rows marked for a new replica id: replicas.Set.PrepareRecovery);
// RecoverGroup then records the decision: the survivor holds the group as
// that new replica, alone in its Raft membership, and every other replica
// of the group is tombstoned — never started again, wherever it comes
// back. The dead nodes stay desired peers until replicas are moved off
// them (a move's removal of a replica that is not a member is a no-op), so
// the group shows under-replicated until then.

// MaxTombstones bounds the tombstones kept; the oldest go first (their
// nodes have long been removed or moved off).
const MaxTombstones = 4096

// MaxRecoveries bounds the recoveries kept for the operator's view.
const MaxRecoveries = 100

// RecoverGroup records the recovery of Group from the replica OldReplica
// on Node, which now holds it as Replica (NextReplicaID when the survivor
// was prepared: the survivor's rows are marked for it). Index is the
// recovered index.
type RecoverGroup struct {
	Group      slotstore.GroupID `json:"group"`
	Node       slotstore.NodeID  `json:"node"`
	OldReplica uint64            `json:"old_replica"`
	Replica    uint64            `json:"replica"`
	Index      uint64            `json:"index"`
	// Term is the Raft term the group's new log begins at: past every
	// term it was known to have had, so that routers and clients, which
	// ignore a leader of an older term, follow the new leader.
	Term uint64 `json:"term"`
	// Lost says what may have been lost (the report's summary).
	Lost string `json:"lost,omitempty"`
}

// Tombstone is a replica that must never run again.
type Tombstone struct {
	Group   slotstore.GroupID `json:"group"`
	Replica uint64            `json:"replica"`
	Node    slotstore.NodeID  `json:"node"`
	AtMs    int64             `json:"at_ms"`
}

// Recovery is one recovery as recorded.
type Recovery struct {
	Group      slotstore.GroupID `json:"group"`
	Node       slotstore.NodeID  `json:"node"`
	OldReplica uint64            `json:"old_replica"`
	Replica    uint64            `json:"replica"`
	Index      uint64            `json:"index"`
	Term       uint64            `json:"term"`
	Tombstoned []uint64          `json:"tombstoned"`
	Lost       string            `json:"lost,omitempty"`
	AtMs       int64             `json:"at_ms"`
}

// Tombstoned reports whether replica r of group g was tombstoned.
func (s *State) Tombstoned(g slotstore.GroupID, r uint64) (Tombstone, bool) {
	for i := len(s.Tombstones) - 1; i >= 0; i-- {
		if t := s.Tombstones[i]; t.Group == g && t.Replica == r {
			return t, true
		}
	}
	return Tombstone{}, false
}

// pruneTombstones keeps at most MaxTombstones, dropping the oldest whose
// replica no group names as a desired peer any more (its node was moved
// off or removed: nothing would start it). One still named stays, whatever
// the bound: forgetting it would make it wanted again.
func pruneTombstones(s *State) {
	over := len(s.Tombstones) - MaxTombstones
	if over <= 0 {
		return
	}
	kept := s.Tombstones[:0:0]
	for _, t := range s.Tombstones {
		if over > 0 {
			if g, ok := s.Groups[t.Group]; !ok || g.Peers[t.Node] != t.Replica {
				over--
				continue
			}
		}
		kept = append(kept, t)
	}
	s.Tombstones = kept
}

// RecoveredAs is the recovery that made replica r of group g, if one did.
func (s *State) RecoveredAs(g slotstore.GroupID, r uint64) (Recovery, bool) {
	for i := len(s.Recoveries) - 1; i >= 0; i-- {
		if rec := s.Recoveries[i]; rec.Group == g && rec.Replica == r {
			return rec, true
		}
	}
	return Recovery{}, false
}

func applyRecoverGroup(s *State, c *RecoverGroup, timeMs int64) Result {
	g, ok := s.Groups[c.Group]
	if !ok {
		return refuse(slotstore.CodeNotFound, "group %d does not exist", c.Group)
	}
	if r, ok := g.Peers[c.Node]; !ok || r != c.OldReplica {
		return refuse(slotstore.CodeConflict, "node %d does not hold replica %d of group %d", c.Node, c.OldReplica, c.Group)
	}
	if c.Replica != s.NextReplicaID {
		return refuse(slotstore.CodeConflict, "replica id %d is not the next one (%d): prepare the survivor again", c.Replica, s.NextReplicaID)
	}
	for _, t := range s.Tasks {
		if (t.Group == c.Group || t.ToGroup == c.Group) && (t.Status == TaskRunning || t.Status == TaskCancelling || t.Status == TaskFailed) {
			if t.Kind != TaskReplicaMove {
				return refuse(slotstore.CodeFailedPrecondition, "task %d (%s) moves hash slots of group %d: finish or cancel it first", t.ID, t.Kind, c.Group)
			}
		}
	}
	rec := Recovery{Group: c.Group, Node: c.Node, OldReplica: c.OldReplica, Replica: c.Replica, Index: c.Index, Term: max(c.Term, 1), Lost: c.Lost, AtMs: timeMs}
	tomb := func(node slotstore.NodeID, r uint64) {
		s.Tombstones = append(s.Tombstones, Tombstone{Group: c.Group, Replica: r, Node: node, AtMs: timeMs})
		rec.Tombstoned = append(rec.Tombstoned, r)
	}
	for _, n := range g.PeerNodes() {
		tomb(n, g.Peers[n])
	}
	for _, id := range s.TaskIDs() {
		t := s.Tasks[id]
		if t.Group == c.Group && t.Kind == TaskReplicaMove && (t.Status == TaskRunning || t.Status == TaskCancelling || t.Status == TaskFailed) {
			if t.NewReplicaID != 0 {
				tomb(t.To, t.NewReplicaID)
			}
			t.Status, t.Error, t.UpdatedAtMs = TaskCancelled, fmt.Sprintf("group %d was recovered from node %d", c.Group, c.Node), timeMs
		}
	}
	g.Peers[c.Node] = c.Replica
	delete(s.HighWater, c.Group) // the new log's indexes are the survivor's, not the lost ones'
	pruneTombstones(s)
	g.ConfigEpoch++
	g.PreferredLeader, g.PreferredSetAtMs = c.Node, timeMs
	s.NextReplicaID++
	s.Recoveries = appendBounded(s.Recoveries, rec, MaxRecoveries)
	return Result{OK: true, Message: fmt.Sprintf("group %d recovered from node %d as replica %d; replicas %v tombstoned", c.Group, c.Node, c.Replica, rec.Tombstoned)}
}
