package meta

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The subscriber → membership projection. A change to a channel's
// subscribers commits, in the same batch, an outbox record in the channel's
// hash slot: which uids were added or removed, and the channel's subscriber
// version after the change. A projector on the channel group's leader
// applies each record to the users' own groups (ProjectMembership, fenced
// by that version, so replays are harmless) and then acknowledges it
// (AckOutbox), which deletes it and lowers the channel's pending count.
// A crash anywhere in between leaves the record to be projected again.

// OutboxRecord is one pending projection.
type OutboxRecord struct {
	ChannelType uint8
	ChannelID   string
	Version     uint64 // the channel's subscriber version after the change
	Add         bool   // true: uids joined; false: uids left
	UIDs        []string
}

func (r *OutboxRecord) code(c *coder) {
	c.version(entityVersion, "outbox")
	c.channelRef(&r.ChannelType, &r.ChannelID)
	c.uvarint(&r.Version)
	c.bool(&r.Add)
	list(c, &r.UIDs, maxOutboxUIDs, "uids in one outbox record", codeUID)
}

// EncodeOutboxRecord encodes r as a stored value.
func EncodeOutboxRecord(r *OutboxRecord) []byte { return encodeEntity(r) }

// maxOutboxUIDs bounds one record (a list change takes at most 1000 uids).
const maxOutboxUIDs = 1000

// DecodeOutboxRecord decodes a stored outbox record.
func DecodeOutboxRecord(b []byte) (*OutboxRecord, error) { return decodeEntity[OutboxRecord](b) }

// Outbox commands and query (ops/kinds/tags 52–55).
const (
	OpProjectMembership Op = 52
	OpAckOutbox         Op = 53

	QueryScanOutbox QueryKind = 52

	answerOutboxPage = 52
)

// ProjectMembership applies one outbox change to one user's membership,
// unless the row already carries this or a newer subscriber version.
type ProjectMembership struct {
	Header
	UserChannel
	Version uint64
	Add     bool
}

// AckOutbox deletes the outbox record Seq of a channel's hash slot and
// lowers the channel's pending count; acknowledging twice changes nothing.
type AckOutbox struct {
	Header
	ChannelType uint8
	ChannelID   string
	Seq         uint64
}

func (*ProjectMembership) Op() Op     { return OpProjectMembership }
func (*AckOutbox) Op() Op             { return OpAckOutbox }
func (c *AckOutbox) RouteKey() string { return c.ChannelID }

func (c *ProjectMembership) codeBody(k *coder) {
	c.UserChannel.code(k)
	k.uvarint(&c.Version)
	k.bool(&c.Add)
}

func (c *AckOutbox) codeBody(k *coder) {
	k.channelRef(&c.ChannelType, &c.ChannelID)
	k.uvarint(&c.Seq)
}

// ScanOutbox lists pending records of the hash slots [FromSlot, ToSlot]
// (one group's), oldest first within a slot. Answer: *OutboxPage.
type ScanOutbox struct {
	FromSlot slotstore.HashSlot
	ToSlot   slotstore.HashSlot
	Limit    int
}

// OutboxEntry is one pending record and where it lives.
type OutboxEntry struct {
	HashSlot slotstore.HashSlot
	Seq      uint64
	Record   *OutboxRecord
}

// OutboxPage is ScanOutbox's answer.
type OutboxPage struct {
	Entries []OutboxEntry
}

func (q *ScanOutbox) RouteSlot() slotstore.HashSlot { return q.FromSlot }
func (*ScanOutbox) Kind() QueryKind                 { return QueryScanOutbox }

// maxOutboxScan bounds a scan of the outbox and its answer.
const maxOutboxScan = 1000

func (q *ScanOutbox) codeQuery(c *coder) {
	c.slot(&q.FromSlot)
	c.slot(&q.ToSlot)
	c.limit(&q.Limit, maxOutboxScan, "outbox scan limit")
}

func (en *OutboxEntry) code(c *coder) {
	c.slot(&en.HashSlot)
	c.uvarint(&en.Seq)
	stored(c, &en.Record)
}

func (p *OutboxPage) code(c *coder) {
	list(c, &p.Entries, maxOutboxScan, "outbox entries", walk[OutboxEntry])
}

func init() {
	registerCommand[ProjectMembership]()
	registerCommand[AckOutbox]()
	registerQuery[ScanOutbox]()
	registerPageAnswer[OutboxPage](answerOutboxPage)
}
