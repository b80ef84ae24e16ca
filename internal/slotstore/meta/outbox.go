package meta

import (
	"slotmeta/internal/slotstore"
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

// EncodeOutboxRecord encodes r as a stored value.
func EncodeOutboxRecord(r *OutboxRecord) []byte {
	e := encoder{b: make([]byte, 0, 32+len(r.ChannelID)+16*len(r.UIDs))}
	e.u8(entityVersion)
	encChannelRef(&e, r.ChannelType, r.ChannelID)
	e.uvarint(r.Version)
	e.bool(r.Add)
	e.uvarint(uint64(len(r.UIDs)))
	for _, u := range r.UIDs {
		e.str(u)
	}
	return e.b
}

// maxOutboxUIDs bounds one record (a list change takes at most 1000 uids).
const maxOutboxUIDs = 1000

// DecodeOutboxRecord decodes a stored outbox record.
func DecodeOutboxRecord(b []byte) (*OutboxRecord, error) {
	d := decoder{b: b}
	if v := d.u8(); v != entityVersion && d.err() == nil {
		d.fail("unknown outbox version %d", v)
	}
	r := &OutboxRecord{}
	r.ChannelType, r.ChannelID = decChannelRef(&d)
	r.Version = d.uvarint()
	r.Add = d.bool()
	n := d.uvarint()
	if n > maxOutboxUIDs {
		d.fail("%d uids in one outbox record", n)
	}
	for i := uint64(0); i < n && d.err() == nil; i++ {
		r.UIDs = append(r.UIDs, d.str(MaxKeyBytes))
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return r, nil
}

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

func (*ProjectMembership) Op() Op             { return OpProjectMembership }
func (*AckOutbox) Op() Op                     { return OpAckOutbox }
func (c *ProjectMembership) RouteKey() string { return c.UID }
func (c *AckOutbox) RouteKey() string         { return c.ChannelID }

func (c *ProjectMembership) encodeBody(e *encoder) {
	c.UserChannel.encodeRef(e)
	e.uvarint(c.Version)
	e.bool(c.Add)
}

func (c *ProjectMembership) decodeBody(d *decoder) {
	c.UserChannel.decodeRef(d)
	c.Version = d.uvarint()
	c.Add = d.bool()
}

func (c *AckOutbox) encodeBody(e *encoder) {
	encChannelRef(e, c.ChannelType, c.ChannelID)
	e.uvarint(c.Seq)
}

func (c *AckOutbox) decodeBody(d *decoder) {
	c.ChannelType, c.ChannelID = decChannelRef(d)
	c.Seq = d.uvarint()
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
func (q *ScanOutbox) encodeQuery(e *encoder) {
	e.u16(uint16(q.FromSlot))
	e.u16(uint16(q.ToSlot))
	e.uvarint(uint64(max(q.Limit, 0)))
}
func (q *ScanOutbox) decodeQuery(d *decoder) {
	q.FromSlot = slotstore.HashSlot(d.u16())
	q.ToSlot = slotstore.HashSlot(d.u16())
	n := d.uvarint()
	if n > 1000 {
		d.fail("outbox scan limit %d", n)
	}
	q.Limit = int(n)
}

func init() {
	registerCommand(OpProjectMembership, func() Command { return &ProjectMembership{} })
	registerCommand(OpAckOutbox, func() Command { return &AckOutbox{} })
	registerQuery(QueryScanOutbox, func() Query { return &ScanOutbox{} })
	registerAnswer(answerOutboxPage, (*OutboxPage)(nil), func(e *encoder, v any) {
		p := v.(*OutboxPage)
		e.uvarint(uint64(len(p.Entries)))
		for _, en := range p.Entries {
			e.u16(uint16(en.HashSlot))
			e.uvarint(en.Seq)
			e.bytes(EncodeOutboxRecord(en.Record))
		}
	}, func(d *decoder) (any, error) {
		n := d.uvarint()
		if n > 1000 {
			d.fail("%d outbox entries", n)
		}
		p := &OutboxPage{}
		for i := uint64(0); i < n && d.err() == nil; i++ {
			en := OutboxEntry{HashSlot: slotstore.HashSlot(d.u16()), Seq: d.uvarint()}
			raw := d.bytes(MaxEntryBytes)
			if d.err() != nil {
				break
			}
			r, err := DecodeOutboxRecord(raw)
			if err != nil {
				return nil, err
			}
			en.Record = r
			p.Entries = append(p.Entries, en)
		}
		return p, d.err()
	})
}
