package meta

import (
	"encoding/binary"

	"slotmeta/internal/slotstore"
)

// Storage keys. One Pebble DB per node holds every group of that node:
//
//	data:   group(u32 BE) | hashSlot(u16 BE) | table(u16 BE) | primary key…
//	system: group(u32 BE) | 0xFFFF           | kind(u16 BE)  | …
//
// A group's whole state is the prefix group(u32) — one scan for a snapshot —
// and one hash slot of it is the sub-prefix group|slot, which a hash-slot
// migration copies from one group's prefix into another's. Group 0 is never
// a slot group; its system keys hold node-wide records (the format version).
// This file is the only place that builds keys.

// Table identifies a kind of row within a hash slot.
type Table uint16

const (
	TableUser  Table = 1
	TableKV    Table = 2
	TableDedup Table = 3 // idempotency records
)

// sysSlot marks the system sub-space of a group; it is above every hash slot.
const sysSlot = 0xFFFF

// SysKind identifies a system record of a group.
type SysKind uint16

const (
	SysApplied   SysKind = 1 // u64: the Raft index the group's state reflects
	SysOwned     SysKind = 2 // the owned hash-slot set (EncodeSlotSet)
	SysRevision  SysKind = 3 // u64: the group's last assigned revision
	SysDedupMeta SysKind = 4 // u64 head | u64 tail of the idempotency FIFO
	SysDedupLog  SysKind = 5 // | seq(u64): which idempotency record was written at seq

	SysFormatVersion SysKind = 0x100 // node-wide, under group 0: the store format
)

// GroupPrefix is the prefix of every key of group g.
func GroupPrefix(g slotstore.GroupID) []byte {
	return binary.BigEndian.AppendUint32(make([]byte, 0, 4), uint32(g))
}

// SlotPrefix is the prefix of every row of hash slot s in group g.
func SlotPrefix(g slotstore.GroupID, s slotstore.HashSlot) []byte {
	b := make([]byte, 0, 6)
	b = binary.BigEndian.AppendUint32(b, uint32(g))
	return binary.BigEndian.AppendUint16(b, uint16(s))
}

// TablePrefix is the prefix of the rows of table t in hash slot s of group g.
func TablePrefix(g slotstore.GroupID, s slotstore.HashSlot, t Table) []byte {
	return binary.BigEndian.AppendUint16(SlotPrefix(g, s), uint16(t))
}

// RowKey is the key of one row.
func RowKey(g slotstore.GroupID, s slotstore.HashSlot, t Table, pk string) []byte {
	p := TablePrefix(g, s, t)
	return append(p, pk...)
}

// UserKey is the key of user uid.
func UserKey(g slotstore.GroupID, s slotstore.HashSlot, uid string) []byte {
	return RowKey(g, s, TableUser, uid)
}

// KVKey is the key of business key k.
func KVKey(g slotstore.GroupID, s slotstore.HashSlot, k string) []byte {
	return RowKey(g, s, TableKV, k)
}

// DedupKey is the key of the idempotency record for key id.
func DedupKey(g slotstore.GroupID, s slotstore.HashSlot, id string) []byte {
	return RowKey(g, s, TableDedup, id)
}

// SysKey is the key of system record kind of group g.
func SysKey(g slotstore.GroupID, kind SysKind) []byte {
	b := make([]byte, 0, 16)
	b = binary.BigEndian.AppendUint32(b, uint32(g))
	b = binary.BigEndian.AppendUint16(b, sysSlot)
	return binary.BigEndian.AppendUint16(b, uint16(kind))
}

// DedupLogKey is the key of the idempotency FIFO at position seq.
func DedupLogKey(g slotstore.GroupID, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(SysKey(g, SysDedupLog), seq)
}

// PrefixEnd returns the smallest key greater than every key with prefix p
// (nil if there is none).
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// SplitRowKey returns the group, hash slot, table and primary key of a data
// key, and false for a system key or a key too short to be a row.
func SplitRowKey(k []byte) (slotstore.GroupID, slotstore.HashSlot, Table, []byte, bool) {
	if len(k) < 8 {
		return 0, 0, 0, nil, false
	}
	s := binary.BigEndian.Uint16(k[4:])
	if s == sysSlot {
		return 0, 0, 0, nil, false
	}
	return slotstore.GroupID(binary.BigEndian.Uint32(k)), slotstore.HashSlot(s), Table(binary.BigEndian.Uint16(k[6:])), k[8:], true
}

// EncodeSlotSet encodes a set of hash slots as a 256-bit bitmap.
func EncodeSlotSet(slots []slotstore.HashSlot) []byte {
	b := make([]byte, slotstore.HashSlotCount/8)
	for _, s := range slots {
		if s.Valid() {
			b[s/8] |= 1 << (s % 8)
		}
	}
	return b
}

// SlotSet is a set of hash slots.
type SlotSet [slotstore.HashSlotCount / 8]byte

// Has reports whether s is in the set.
func (ss *SlotSet) Has(s slotstore.HashSlot) bool {
	return s.Valid() && ss[s/8]&(1<<(s%8)) != 0
}

// Slots lists the set in ascending order.
func (ss *SlotSet) Slots() []slotstore.HashSlot {
	var out []slotstore.HashSlot
	for s := 0; s < slotstore.HashSlotCount; s++ {
		if ss.Has(slotstore.HashSlot(s)) {
			out = append(out, slotstore.HashSlot(s))
		}
	}
	return out
}

// DecodeSlotSet decodes EncodeSlotSet's output.
func DecodeSlotSet(b []byte) (SlotSet, bool) {
	var ss SlotSet
	if len(b) != len(ss) {
		return ss, false
	}
	copy(ss[:], b)
	return ss, true
}
