// Package routing turns a route key into a Route: key → hash slot (CRC32-IEEE
// mod 256) → slot group (the versioned HashToGroup table) → the group's live
// leader, term and config epoch.
//
// Concurrency: a Snapshot is an immutable value. A Router publishes the
// current Snapshot through an atomic pointer; readers Load it without locks
// and may resolve any number of keys against it, all under one revision.
// Writers call SetTable, SetConfigEpoch, SetLeader and ForgetGroup
// (router.go): the controller follower, the leader-change listener, the
// replica set (its leader refresh, and ForgetGroup when a replica stops),
// a finished leader transfer and the leader hints of refused requests.
// Each goes through update, which builds a new Snapshot from a copy of the
// current one (or none, when nothing changes) and stores it; writers
// serialise among themselves with the Router's mutex, never blocking
// readers.
//
// A route is never guessed: a hash slot without a group, a group without a
// known live leader, or a table that has not arrived yet all yield
// slotstore.ErrRouteNotReady.
package routing

import (
	"encoding/binary"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Table is the HashToGroup mapping at one RouteRevision. It is immutable.
type Table struct {
	revision uint64
	groups   [slotstore.HashSlotCount]slotstore.GroupID
}

// InitialTable splits the 256 hash slots into groupCount contiguous ranges
// whose sizes differ by at most one (the first 256%groupCount ranges are one
// larger), at revision 1. Group ids run from 1 to groupCount.
func InitialTable(groupCount int) (*Table, error) {
	if groupCount < 1 || groupCount > slotstore.HashSlotCount {
		return nil, fmt.Errorf("routing: group count %d out of range 1..%d", groupCount, slotstore.HashSlotCount)
	}
	t := &Table{revision: 1}
	base, extra := slotstore.HashSlotCount/groupCount, slotstore.HashSlotCount%groupCount
	slot := 0
	for g := 1; g <= groupCount; g++ {
		n := base
		if g <= extra {
			n++
		}
		for i := 0; i < n; i++ {
			t.groups[slot] = slotstore.GroupID(g)
			slot++
		}
	}
	return t, nil
}

// NewTable builds a table from a full mapping. Every hash slot must map to a group.
func NewTable(revision uint64, groups [slotstore.HashSlotCount]slotstore.GroupID) (*Table, error) {
	if revision == 0 {
		return nil, fmt.Errorf("routing: revision must be positive")
	}
	for s, g := range groups {
		if g == 0 {
			return nil, fmt.Errorf("routing: hash slot %d has no group", s)
		}
	}
	return &Table{revision: revision, groups: groups}, nil
}

// Revision is the table's RouteRevision.
func (t *Table) Revision() uint64 { return t.revision }

// Group returns the group that owns hash slot s.
func (t *Table) Group(s slotstore.HashSlot) slotstore.GroupID {
	if !s.Valid() {
		return 0
	}
	return t.groups[s]
}

// Groups returns a copy of the whole mapping.
func (t *Table) Groups() [slotstore.HashSlotCount]slotstore.GroupID { return t.groups }

// SlotsOf returns the hash slots owned by g, in ascending order.
func (t *Table) SlotsOf(g slotstore.GroupID) []slotstore.HashSlot {
	var out []slotstore.HashSlot
	for s, owner := range t.groups {
		if owner == g {
			out = append(out, slotstore.HashSlot(s))
		}
	}
	return out
}

// GroupIDs returns the distinct groups of the table in ascending order.
func (t *Table) GroupIDs() []slotstore.GroupID {
	seen := map[slotstore.GroupID]bool{}
	var out []slotstore.GroupID
	for _, g := range t.groups {
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	sortGroups(out)
	return out
}

func sortGroups(gs []slotstore.GroupID) {
	for i := 1; i < len(gs); i++ {
		for j := i; j > 0 && gs[j] < gs[j-1]; j-- {
			gs[j], gs[j-1] = gs[j-1], gs[j]
		}
	}
}

// tableEncodingVersion prefixes MarshalBinary's output.
const tableEncodingVersion = 1

// MarshalBinary encodes the table as version(1) | revision(8) | 256 × group(4), big endian.
func (t *Table) MarshalBinary() ([]byte, error) {
	b := make([]byte, 1+8+4*slotstore.HashSlotCount)
	b[0] = tableEncodingVersion
	binary.BigEndian.PutUint64(b[1:], t.revision)
	for i, g := range t.groups {
		binary.BigEndian.PutUint32(b[9+4*i:], uint32(g))
	}
	return b, nil
}

// UnmarshalTable decodes MarshalBinary's output, rejecting anything malformed.
func UnmarshalTable(b []byte) (*Table, error) {
	if len(b) != 1+8+4*slotstore.HashSlotCount {
		return nil, fmt.Errorf("routing: table encoding has %d bytes", len(b))
	}
	if b[0] != tableEncodingVersion {
		return nil, fmt.Errorf("routing: unknown table encoding version %d", b[0])
	}
	var groups [slotstore.HashSlotCount]slotstore.GroupID
	for i := range groups {
		groups[i] = slotstore.GroupID(binary.BigEndian.Uint32(b[9+4*i:]))
	}
	return NewTable(binary.BigEndian.Uint64(b[1:]), groups)
}
