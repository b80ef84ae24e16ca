package meta

import (
	"encoding/binary"

	"github.com/slotmeta/slotmeta/internal/slotstore"
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

	TableDevice      Table = 10 // uid | device flag
	TableSystemUID   Table = 11 // uid (under the reserved route key SystemUIDsRouteKey)
	TablePlugin      Table = 12 // uid | plugin no
	TablePluginIndex Table = 13 // plugin no | uid (for the scan by plugin)

	TableChannel    Table = 20 // channel
	TableSubscriber Table = 21 // channel | uid
	TableDenylist   Table = 22 // channel | uid
	TableAllowlist  Table = 23 // channel | uid

	TableMembership         Table = 40 // uid | channel
	TableMembershipActivity Table = 41 // uid | ^activity time | channel (newest first)
	TableCmdBinding         Table = 42 // uid | channel
	TableOutbox             Table = 43 // seq: projection work the hash slot owes other groups

	TableRuntime     Table = 60 // channel
	TableChannelTask Table = 61 // channel | task id

	TableEvent Table = 80 // channel | seq

	TableWatch     Table = 90 // seq: the slot's change log (change.go)
	TableWatchHead Table = 91 // the change log's last and first sequence
)

// SystemUIDsRouteKey is the reserved route key under which every system UID
// is stored (one hash slot holds the whole set).
const SystemUIDsRouteKey = "__slotmeta_system_uids__"

// Composite primary keys are built from parts that keep their order: a
// string part that other parts follow is escaped (0x00 → 0x00 0xFF) and
// terminated (0x00 0x01), so "a" sorts before "a\x00b" before "ab"; the last
// part is appended raw; fixed-width integers are big endian.

// appendPart appends a non-final string part.
func appendPart(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			b = append(b, 0, 0xFF)
		} else {
			b = append(b, s[i])
		}
	}
	return append(b, 0, 1)
}

// channelPart appends a channel identity as a non-final part: type | escaped id.
func channelPart(b []byte, channelType uint8, channelID string) []byte {
	return appendPart(append(b, channelType), channelID)
}

// DeviceKey is the key of one device of uid; DevicePrefix covers all of them.
func DeviceKey(g slotstore.GroupID, s slotstore.HashSlot, uid string, flag uint8) []byte {
	return append(DevicePrefix(g, s, uid), flag)
}

// DevicePrefix is the prefix of every device of uid.
func DevicePrefix(g slotstore.GroupID, s slotstore.HashSlot, uid string) []byte {
	return appendPart(TablePrefix(g, s, TableDevice), uid)
}

// SystemUIDKey is the key of one system UID (s is the hash slot of SystemUIDsRouteKey).
func SystemUIDKey(g slotstore.GroupID, s slotstore.HashSlot, uid string) []byte {
	return RowKey(g, s, TableSystemUID, uid)
}

// PluginKey is uid's binding to plugin; PluginPrefix covers uid's bindings.
func PluginKey(g slotstore.GroupID, s slotstore.HashSlot, uid, plugin string) []byte {
	return append(PluginPrefix(g, s, uid), plugin...)
}

// PluginPrefix is the prefix of every plugin binding of uid.
func PluginPrefix(g slotstore.GroupID, s slotstore.HashSlot, uid string) []byte {
	return appendPart(TablePrefix(g, s, TablePlugin), uid)
}

// PluginIndexKey indexes uid under plugin in uid's hash slot.
func PluginIndexKey(g slotstore.GroupID, s slotstore.HashSlot, plugin, uid string) []byte {
	return append(PluginIndexPrefix(g, s, plugin), uid...)
}

// PluginIndexPrefix is the prefix of the users bound to plugin in one hash slot.
func PluginIndexPrefix(g slotstore.GroupID, s slotstore.HashSlot, plugin string) []byte {
	return appendPart(TablePrefix(g, s, TablePluginIndex), plugin)
}

// ChannelKey is the key of a channel row (also of its runtime meta, with TableRuntime).
func ChannelKey(g slotstore.GroupID, s slotstore.HashSlot, t Table, channelType uint8, channelID string) []byte {
	return append(append(TablePrefix(g, s, t), channelType), channelID...)
}

// ChannelMemberKey is the key of uid in one of a channel's lists
// (TableSubscriber, TableDenylist, TableAllowlist).
func ChannelMemberKey(g slotstore.GroupID, s slotstore.HashSlot, list Table, channelType uint8, channelID, uid string) []byte {
	return append(ChannelListPrefix(g, s, list, channelType, channelID), uid...)
}

// ChannelListPrefix is the prefix of one list of a channel (also of its
// tasks and events, with TableChannelTask and TableEvent).
func ChannelListPrefix(g slotstore.GroupID, s slotstore.HashSlot, list Table, channelType uint8, channelID string) []byte {
	return channelPart(TablePrefix(g, s, list), channelType, channelID)
}

// ChannelTaskKey is the key of a channel's migration task.
func ChannelTaskKey(g slotstore.GroupID, s slotstore.HashSlot, channelType uint8, channelID string, taskID uint64) []byte {
	return binary.BigEndian.AppendUint64(ChannelListPrefix(g, s, TableChannelTask, channelType, channelID), taskID)
}

// EventKey is the key of a channel's message-event projection at seq.
func EventKey(g slotstore.GroupID, s slotstore.HashSlot, channelType uint8, channelID string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(ChannelListPrefix(g, s, TableEvent, channelType, channelID), seq)
}

// UserChannelKey is the key of uid's row about a channel (TableMembership, TableCmdBinding).
func UserChannelKey(g slotstore.GroupID, s slotstore.HashSlot, t Table, uid string, channelType uint8, channelID string) []byte {
	return append(append(UserTablePrefix(g, s, t, uid), channelType), channelID...)
}

// UserTablePrefix is the prefix of uid's rows in table t.
func UserTablePrefix(g slotstore.GroupID, s slotstore.HashSlot, t Table, uid string) []byte {
	return appendPart(TablePrefix(g, s, t), uid)
}

// MembershipActivityKey indexes uid's membership of a channel by activity
// time, newest first (the time is stored inverted).
func MembershipActivityKey(g slotstore.GroupID, s slotstore.HashSlot, uid string, activityMs int64, channelType uint8, channelID string) []byte {
	b := binary.BigEndian.AppendUint64(UserTablePrefix(g, s, TableMembershipActivity, uid), ^uint64(activityMs))
	return append(append(b, channelType), channelID...)
}

// OutboxKey is the key of the projection record at seq in hash slot s.
func OutboxKey(g slotstore.GroupID, s slotstore.HashSlot, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(TablePrefix(g, s, TableOutbox), seq)
}

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
	SysFenced    SysKind = 6 // the fenced hash-slot set (EncodeSlotSet): writes refused, migrating out
	SysTracked   SysKind = 7 // the tracked hash-slot set (EncodeSlotSet): changes logged, moving out live
	SysChangeLog SysKind = 8 // | slot(u16) | index(u64) | seq(u32): the row key a command changed in a tracked slot
	SysRestored  SysKind = 9 // u64: the replica a restore laid the group's rows out for

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

// ChangeLogPrefix is the prefix of the change log of hash slot s in group g
// (under the group's system records: never exported with the slot's rows).
func ChangeLogPrefix(g slotstore.GroupID, s slotstore.HashSlot) []byte {
	return binary.BigEndian.AppendUint16(SysKey(g, SysChangeLog), uint16(s))
}

// ChangeLogKey is the change log record of the seq-th change that the entry
// at Raft index made to hash slot s.
func ChangeLogKey(g slotstore.GroupID, s slotstore.HashSlot, index uint64, seq uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(ChangeLogPrefix(g, s), index), seq)
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

// SlotSet is a set of hash slots. A nil *SlotSet is the empty set: a
// state machine publishes its sets as pointers, nil until Open loads them,
// and readers on other goroutines (the change feed's log, the projector)
// may ask a replica that is starting.
type SlotSet [slotstore.HashSlotCount / 8]byte

// Empty reports whether the set holds no slot.
func (ss *SlotSet) Empty() bool { return ss == nil || *ss == SlotSet{} }

// Has reports whether s is in the set.
func (ss *SlotSet) Has(s slotstore.HashSlot) bool {
	return ss != nil && s.Valid() && ss[s/8]&(1<<(s%8)) != 0
}

// And is the slots in both ss and o (a nil set is empty).
func (ss *SlotSet) And(o *SlotSet) SlotSet {
	var out SlotSet
	if ss == nil || o == nil {
		return out
	}
	for i := range out {
		out[i] = ss[i] & o[i]
	}
	return out
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
