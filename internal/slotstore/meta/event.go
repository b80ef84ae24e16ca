package meta

import "slotmeta/internal/slotstore"

// DefaultEventCapacity is how many message events a channel's projection
// keeps by default: an append beyond it trims the oldest in the same batch.
// The capacity decides which rows exist, so it is replicated behaviour:
// every replica of a group must use the same value (fsm.Config).
const DefaultEventCapacity = 1000

// Limits of an event's fields.
const (
	MaxEventPayloadBytes = 16 << 10
	MaxEventIDBytes      = 128 // client_msg_no, event_key, event_id
	MaxEventTypeBytes    = 64  // event_type, status
)

// ChannelEvent is one entry of a channel's bounded message-event
// projection (for example the states of a streamed message). Its route key
// is the channel id; it lives under TableEvent at its per-channel seq (from
// 1; the channel's SeqWindow record is at seq 0).
type ChannelEvent struct {
	ChannelType uint8
	ChannelID   string
	Seq         uint64
	ClientMsgNo string
	EventKey    string
	EventID     string
	EventType   string
	Status      string
	Payload     []byte // JSON, ≤ MaxEventPayloadBytes; empty means none
	CreatedAtMs int64
	Revision    uint64
}

func encodeEventFields(e *encoder, ev *ChannelEvent) {
	encChannelRef(e, ev.ChannelType, ev.ChannelID)
	e.str(ev.ClientMsgNo)
	e.str(ev.EventKey)
	e.str(ev.EventID)
	e.str(ev.EventType)
	e.str(ev.Status)
	e.bytes(ev.Payload)
}

func decodeEventFields(d *decoder, ev *ChannelEvent) {
	ev.ChannelType, ev.ChannelID = decChannelRef(d)
	ev.ClientMsgNo = d.str(MaxKeyBytes)
	ev.EventKey = d.str(MaxKeyBytes)
	ev.EventID = d.str(MaxKeyBytes)
	ev.EventType = d.str(MaxKeyBytes)
	ev.Status = d.str(MaxKeyBytes)
	ev.Payload = d.bytes(MaxEventPayloadBytes)
}

// EncodeChannelEvent encodes ev as a stored value.
func EncodeChannelEvent(ev *ChannelEvent) []byte {
	e := encoder{b: make([]byte, 0, 48+len(ev.ChannelID)+len(ev.ClientMsgNo)+len(ev.EventKey)+len(ev.EventID)+len(ev.Payload))}
	e.u8(entityVersion)
	encodeEventFields(&e, ev)
	e.uvarint(ev.Seq)
	e.varint(ev.CreatedAtMs)
	e.uvarint(ev.Revision)
	return e.b
}

// DecodeChannelEvent decodes a stored event (appended fields ignored).
func DecodeChannelEvent(b []byte) (*ChannelEvent, error) {
	d := decoder{b: b}
	if v := d.u8(); v != entityVersion && d.err() == nil {
		d.fail("unknown event version %d", v)
	}
	ev := &ChannelEvent{}
	decodeEventFields(&d, ev)
	ev.Seq = d.uvarint()
	ev.CreatedAtMs = d.varint()
	ev.Revision = d.uvarint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return ev, nil
}

// Event commands (ops 80–99).
const OpAppendEvent Op = 80

// AppendEvent appends Event (client fields only) to its channel's
// projection with the next seq, trimming the oldest events beyond the
// group's event capacity in the same batch.
type AppendEvent struct {
	Header
	Event ChannelEvent
}

func (*AppendEvent) Op() Op                  { return OpAppendEvent }
func (c *AppendEvent) RouteKey() string      { return c.Event.ChannelID }
func (c *AppendEvent) encodeBody(e *encoder) { encodeEventFields(e, &c.Event) }
func (c *AppendEvent) decodeBody(d *decoder) { decodeEventFields(d, &c.Event) }

// Event queries and answers.
const (
	QueryListEvents QueryKind = 80
	answerEventPage uint8     = 80
)

// ListEvents lists a channel's events newest first, those with seqs below
// BeforeSeq when it is not 0. Answer: *EventPage.
type ListEvents struct {
	HashSlot slotstore.HashSlot
	ChanRef
	BeforeSeq uint64
	Limit     int
}

// EventPage is ListEvents' answer. Count is how many events the channel
// holds in all; LastSeq is the newest seq ever assigned.
type EventPage struct {
	Items   []*ChannelEvent
	More    bool
	Count   uint64
	LastSeq uint64
}

func (*ListEvents) Kind() QueryKind                 { return QueryListEvents }
func (q *ListEvents) RouteSlot() slotstore.HashSlot { return q.HashSlot }

func (q *ListEvents) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	q.encodeRef(e)
	e.uvarint(q.BeforeSeq)
	encLimit(e, q.Limit)
}

func (q *ListEvents) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.decodeRef(d)
	q.BeforeSeq = d.uvarint()
	q.Limit = decLimit(d)
}

func encodeEventPage(e *encoder, v any) {
	p := v.(*EventPage)
	e.uvarint(uint64(len(p.Items)))
	for _, ev := range p.Items {
		e.bytes(EncodeChannelEvent(ev))
	}
	e.bool(p.More)
	e.uvarint(p.Count)
	e.uvarint(p.LastSeq)
}

func decodeEventPage(d *decoder) (any, error) {
	p := &EventPage{}
	var err error
	if p.Items, err = decPageItems(d, DecodeChannelEvent); err != nil {
		return nil, err
	}
	p.More = d.bool()
	p.Count = d.uvarint()
	p.LastSeq = d.uvarint()
	return p, d.err()
}

func init() {
	registerCommand(OpAppendEvent, func() Command { return &AppendEvent{} })
	registerQuery(QueryListEvents, func() Query { return &ListEvents{} })
	registerAnswer(answerEventPage, (*EventPage)(nil), encodeEventPage, decodeEventPage)
}
