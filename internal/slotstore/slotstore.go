// Package slotstore holds the domain types of slotmeta: the two kinds of slot,
// routes, node identities and the one error type every layer speaks.
//
// slotmeta shards its metadata over exactly HashSlotCount physical hash slots
// (CRC32-IEEE of the route key, modulo 256). A versioned HashToGroup table maps
// every hash slot onto a logical slot group: a Raft group (a dragonboat shard)
// whose state machine keeps the rows of the hash slots it owns. The two are
// never mixed up: HashSlot and GroupID are distinct types, and only an explicit
// hash-slot migration changes which group owns a hash slot.
//
// This package depends on the standard library only. Adapters (storage, Raft,
// HTTP) import it; it imports none of them. It is the root of the domain
// tree (meta, routing, clusterversion, checks, watch: none imports the
// engine, internal/engine, or anything else of ours outside this tree).
package slotstore

import (
	"fmt"
	"hash/crc32"
	"unsafe"
)

// HashSlotCount is the fixed number of physical hash slots.
const HashSlotCount = 256

// HashSlot is a physical hash slot, 0..255.
type HashSlot uint16

// GroupID identifies a logical slot group (a Raft group). Ids start at 1; 0 is "none".
type GroupID uint32

// NodeID identifies a node (one process, one dragonboat NodeHost). 0 is "none".
type NodeID uint64

// HashSlotOf returns the physical hash slot of a route key.
func HashSlotOf(key []byte) HashSlot {
	return HashSlot(crc32.ChecksumIEEE(key) % HashSlotCount)
}

// HashSlotOfString is HashSlotOf for a string key, without an allocation.
// ([]byte(key) escapes into crc32's indirect call and would allocate; the
// checksum only reads the bytes, so viewing the string's bytes is safe.)
func HashSlotOfString(key string) HashSlot {
	return HashSlotOf(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Valid reports whether s is one of the 256 hash slots.
func (s HashSlot) Valid() bool { return s < HashSlotCount }

func (s HashSlot) String() string { return fmt.Sprintf("hs%d", uint16(s)) }

func (g GroupID) String() string { return fmt.Sprintf("g%d", uint32(g)) }

// Route is where a key lives right now: its hash slot, the group that owns it
// under RouteRevision, and that group's live leader as this node observes it.
// A Route is only handed out when every field is known (see ErrRouteNotReady).
type Route struct {
	HashSlot      HashSlot
	GroupID       GroupID
	LeaderNodeID  NodeID
	LeaderTerm    uint64
	ConfigEpoch   uint64
	RouteRevision uint64
}
