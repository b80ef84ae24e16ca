package meta

import (
	"encoding/binary"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The change log of a hash slot (ADR 0016, issue 27): every change of a
// watched row is numbered with the slot's next sequence and stored, in the
// same batch as the change, as a Change under the slot's own prefix:
//
//	group | slot | TableWatch     | seq(u64 BE) → Change
//	group | slot | TableWatchHead               → WatchHead
//
// Being rows of the slot, both travel with it when it is exported to
// another group (a migration, a live move, a split or a merge), so the
// sequence continues there: imported rows are copied as they are, never
// numbered again.

// ChangeKind is what a change did to its row.
type ChangeKind uint8

const (
	ChangePut    ChangeKind = 1
	ChangeDelete ChangeKind = 2
	// ChangeClear deleted every row of the table under Key at once (a
	// deleted channel's lists, a deleted user's devices): one record,
	// however many rows.
	ChangeClear ChangeKind = 3
)

func (k ChangeKind) String() string {
	switch k {
	case ChangePut:
		return "put"
	case ChangeDelete:
		return "delete"
	case ChangeClear:
		return "clear"
	}
	return "unknown"
}

// Watched reports whether changes of table t are numbered: the rows the
// API serves. Index rows (membership activity, the plugin index), the
// outbox, idempotency records, channel tasks and events, and the change
// log itself are not.
func (t Table) Watched() bool {
	switch t {
	case TableUser, TableKV, TableDevice, TableSystemUID, TablePlugin,
		TableChannel, TableSubscriber, TableDenylist, TableAllowlist,
		TableMembership, TableCmdBinding, TableRuntime:
		return true
	}
	return false
}

// KeepsPrev reports whether a change of table t stores the row's previous
// value: for a channel and its runtime metadata, whose followers act on
// transitions (leader, epoch, ISR, fence); the others' followers keep
// their own copy (list, then watch), and the previous value would double
// what every write stores.
func (t Table) KeepsPrev() bool { return t == TableChannel || t == TableRuntime }

// Resource is what the rows of watched table t are called where a change
// is shown — the watch's resource parameter and its events, the console's
// change tail — ("" for a table that is not watched).
func (t Table) Resource() string {
	switch t {
	case TableUser:
		return "users"
	case TableDevice:
		return "devices"
	case TablePlugin:
		return "plugins"
	case TableMembership:
		return "memberships"
	case TableCmdBinding:
		return "cmd_bindings"
	case TableSystemUID:
		return "system_uids"
	case TableKV:
		return "kv"
	case TableChannel:
		return "channels"
	case TableRuntime:
		return "runtime"
	case TableSubscriber:
		return "subscribers"
	case TableDenylist:
		return "denylist"
	case TableAllowlist:
		return "allowlist"
	}
	return ""
}

// DecodeRow decodes a stored row of watched table t — a change's value or
// previous value — into its entity (*User, *KV, *ChannelMember, …).
func DecodeRow(t Table, b []byte) (any, error) {
	switch t {
	case TableUser:
		return decodedRow(DecodeUser(b))
	case TableDevice:
		return decodedRow(DecodeDevice(b))
	case TablePlugin:
		return decodedRow(DecodePluginBinding(b))
	case TableMembership:
		return decodedRow(DecodeMembership(b))
	case TableCmdBinding:
		return decodedRow(DecodeCmdBinding(b))
	case TableSystemUID:
		return decodedRow(DecodeSystemUID(b))
	case TableKV:
		return decodedRow(DecodeKV(b))
	case TableChannel:
		return decodedRow(DecodeChannel(b))
	case TableRuntime:
		return decodedRow(DecodeChannelRuntime(b))
	case TableSubscriber, TableDenylist, TableAllowlist:
		return decodedRow(DecodeChannelMember(b))
	}
	return nil, fmt.Errorf("%w: table %d is not watched", ErrMalformed, t)
}

// decodedRow is a decoder's answer as DecodeRow's: no typed nil in an any.
func decodedRow[E any](e *E, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Change is one record of a slot's change log; its slot and sequence are
// in its key.
type Change struct {
	// Batch is the sequence of the first record of the command that made
	// the change: the records of one command share it. (Not the Raft
	// index: the slot's log must not depend on how commands were packed
	// into entries, nor on which group applied them.)
	Batch  uint64
	TimeMs int64 // the proposing leader's time of the command
	Kind   ChangeKind
	Table  Table
	// Key is the row's primary key within its table (after group | slot |
	// table); for a clear, the prefix of the rows cleared.
	Key   []byte
	Value []byte // the row as stored after a put
	Prev  []byte // the row as stored before the change (nil: none, or its table does not keep it)
}

func (ch *Change) code(c *coder) {
	c.version(entityVersion, "change")
	c.uvarint(&ch.Batch)
	c.varint(&ch.TimeMs)
	c.u8((*uint8)(&ch.Kind))
	if ch.Kind < ChangePut || ch.Kind > ChangeClear {
		c.fail("unknown change kind %d", ch.Kind)
	}
	c.u16((*uint16)(&ch.Table))
	c.bytes(&ch.Key, MaxEntryBytes, "change key")
	c.bytes(&ch.Value, MaxEntryBytes, "change value")
	c.bytes(&ch.Prev, MaxEntryBytes, "change previous value")
}

// EncodeChange encodes ch as a stored value (sized once: it is written for
// every watched change).
func EncodeChange(ch *Change) []byte {
	c := encoding(32 + len(ch.Key) + len(ch.Value) + len(ch.Prev))
	ch.code(&c)
	return c.b
}

// DecodeChange decodes a stored change.
func DecodeChange(b []byte) (*Change, error) { return decodeEntity[Change](b) }

// WatchHead is a slot's change-log bookkeeping: the last sequence given
// (0: none yet), the first one still kept (records First…Last exist;
// First = Last+1 when none is kept) and that record's time, which the
// age bound of retention compares without reading it.
type WatchHead struct {
	Last        uint64
	First       uint64
	FirstTimeMs int64
}

func (h *WatchHead) code(c *coder) {
	c.version(entityVersion, "watch head")
	c.uvarint(&h.Last)
	c.uvarint(&h.First)
	c.varint(&h.FirstTimeMs)
}

// EncodeWatchHead encodes h as a stored value.
func EncodeWatchHead(h *WatchHead) []byte { return encodeEntity(h) }

// DecodeWatchHead decodes a stored head.
func DecodeWatchHead(b []byte) (*WatchHead, error) { return decodeEntity[WatchHead](b) }

// WatchPrefix is the prefix of hash slot s's change records in group g.
func WatchPrefix(g slotstore.GroupID, s slotstore.HashSlot) []byte {
	return TablePrefix(g, s, TableWatch)
}

// WatchKey is the key of slot s's change record seq.
func WatchKey(g slotstore.GroupID, s slotstore.HashSlot, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(WatchPrefix(g, s), seq)
}

// WatchHeadKey is the key of slot s's WatchHead.
func WatchHeadKey(g slotstore.GroupID, s slotstore.HashSlot) []byte {
	return TablePrefix(g, s, TableWatchHead)
}
