package controller

import (
	"fmt"
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// A restored cluster (issue 29) is founded by the same Bootstrap command as
// a new one, with Restore set: the backed-up cluster's groups, routing table
// and audit trail take the place of GroupCount new groups. The groups are
// placed by the same rule (Placement), which the restore that laid out
// every node's store followed too: each node holds the rows of exactly the
// groups the founding places on it, and replica ids are node ids.

// Restore is what a restored cluster keeps of the backed-up one.
type Restore struct {
	FromCluster string `json:"from_cluster"`
	BackupID    string `json:"backup_id"`
	// Groups are the backed-up groups, ascending; HashToGroup the table of
	// their images (each hash slot in the image that owns it), at
	// RouteRevision (moved past the old cluster's).
	Groups        []slotstore.GroupID `json:"groups"`
	HashToGroup   []slotstore.GroupID `json:"hash_to_group"`
	RouteRevision uint64              `json:"route_revision"`
	// InitialGroupCount and NextGroupID as the old cluster had them: a
	// group created later takes an id never used before the backup either.
	InitialGroupCount int    `json:"initial_group_count"`
	NextGroupID       uint64 `json:"next_group_id"`
	// Audit is the old cluster's audit trail (bounded by MaxAudit).
	Audit    []AuditRecord `json:"audit,omitempty"`
	AuditSeq uint64        `json:"audit_seq,omitempty"`
}

// Restored records where a restored cluster came from.
type Restored struct {
	FromCluster string `json:"from_cluster"`
	BackupID    string `json:"backup_id"`
	AtMs        int64  `json:"at_ms"`
	// RouteRevision is the founding table's (the backup's, bumped).
	RouteRevision uint64 `json:"route_revision"`
}

func (r *Restore) validate() error {
	if len(r.Groups) == 0 || len(r.Groups) > slotstore.HashSlotCount {
		return fmt.Errorf("controller: a restore of %d groups", len(r.Groups))
	}
	for i, g := range r.Groups {
		if g == 0 || (i > 0 && g <= r.Groups[i-1]) {
			return fmt.Errorf("controller: restored groups %v are not ascending", r.Groups)
		}
	}
	if len(r.HashToGroup) != slotstore.HashSlotCount {
		return fmt.Errorf("controller: a restored table of %d hash slots", len(r.HashToGroup))
	}
	for s, g := range r.HashToGroup {
		if _, ok := slices.BinarySearch(r.Groups, g); !ok {
			return fmt.Errorf("controller: hash slot %d is in group %d, not a restored one", s, g)
		}
	}
	if r.RouteRevision == 0 {
		return fmt.Errorf("controller: a restored table at revision 0")
	}
	if len(r.Audit) > MaxAudit {
		return fmt.Errorf("controller: a restored audit trail of %d records (at most %d)", len(r.Audit), MaxAudit)
	}
	return nil
}

// table is the founding routing table: the initial one of GroupCount
// groups, or the restored one.
func (b *Bootstrap) table() (*routing.Table, error) {
	if b.Restore == nil {
		return routing.InitialTable(b.GroupCount)
	}
	var m [slotstore.HashSlotCount]slotstore.GroupID
	copy(m[:], b.Restore.HashToGroup)
	return routing.NewTable(b.Restore.RouteRevision, m)
}

// found records what the cluster keeps of the backed-up one, and the
// restore itself in the audit trail.
func (r *Restore) found(s *State, timeMs int64) {
	s.InitialGroupCount = r.InitialGroupCount
	s.NextGroupID = r.NextGroupID
	s.Audit = slices.Clone(r.Audit)
	s.AuditSeq = r.AuditSeq
	s.AuditSeq++
	s.Audit = appendBounded(s.Audit, AuditRecord{Seq: s.AuditSeq, AtMs: timeMs, Who: "slotmeta restore", Via: "restore",
		Action: "cluster.restore", Target: r.BackupID, Outcome: slotstore.AuditOK,
		Detail: fmt.Sprintf("restored from backup %s of cluster %s", r.BackupID, r.FromCluster)}, MaxAudit)
	s.Restored = &Restored{FromCluster: r.FromCluster, BackupID: r.BackupID, AtMs: timeMs, RouteRevision: r.RouteRevision}
	s.NextGroupID = uint64(s.nextGroupID())
}

// PlacedGroup is where the founding of a cluster puts one group: on Nodes,
// the first its preferred leader.
type PlacedGroup struct {
	Group slotstore.GroupID
	Nodes []slotstore.NodeID
}

// Placement places groups (ascending) on nodes (ascending ids) as the
// founding of a cluster does: the i-th group takes rf nodes starting at i
// mod N, N/rf apart (consecutive while N < 2·rf), so that replicas and
// preferred leaders spread evenly and a group's replicas lie as far apart
// in the id order as they can: a block of fewer than N/rf consecutive ids
// — a rack numbered in order — holds at most one replica of a group. (The
// simulator found it, package sim: with consecutive nodes, the loss of 10
// of 100 nodes numbered in order took the quorum of 10 groups.) A restore
// lays each node's store out by it.
func Placement(groups []slotstore.GroupID, nodes []slotstore.NodeID, rf int) []PlacedGroup {
	rf = min(rf, len(nodes))
	stride := 1
	if rf > 0 {
		stride = max(1, len(nodes)/rf)
	}
	out := make([]PlacedGroup, 0, len(groups))
	for i, g := range groups {
		p := PlacedGroup{Group: g, Nodes: make([]slotstore.NodeID, rf)}
		for j := range rf {
			p.Nodes[j] = nodes[(i+j*stride)%len(nodes)]
		}
		out = append(out, p)
	}
	return out
}
