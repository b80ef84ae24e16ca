package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

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

// codeClient walks the fields a client sets.
func (ev *ChannelEvent) codeClient(c *coder) {
	c.channelRef(&ev.ChannelType, &ev.ChannelID)
	c.str(&ev.ClientMsgNo, MaxKeyBytes, "client msg no")
	c.str(&ev.EventKey, MaxKeyBytes, "event key")
	c.str(&ev.EventID, MaxKeyBytes, "event id")
	c.str(&ev.EventType, MaxKeyBytes, "event type")
	c.str(&ev.Status, MaxKeyBytes, "status")
	c.bytes(&ev.Payload, MaxEventPayloadBytes, "payload")
}

func (ev *ChannelEvent) code(c *coder) {
	c.version(entityVersion, "event")
	ev.codeClient(c)
	c.uvarint(&ev.Seq)
	c.varint(&ev.CreatedAtMs)
	c.uvarint(&ev.Revision)
}

// EncodeChannelEvent encodes ev as a stored value.
func EncodeChannelEvent(ev *ChannelEvent) []byte { return encodeEntity(ev) }

// DecodeChannelEvent decodes a stored event (appended fields ignored).
func DecodeChannelEvent(b []byte) (*ChannelEvent, error) { return decodeEntity[ChannelEvent](b) }

// Event commands (ops 80–99).
const OpAppendEvent Op = 80

// AppendEvent appends Event (client fields only) to its channel's
// projection with the next seq, trimming the oldest events beyond the
// group's event capacity in the same batch.
type AppendEvent struct {
	Header
	Event ChannelEvent
}

func (*AppendEvent) Op() Op              { return OpAppendEvent }
func (c *AppendEvent) RouteKey() string  { return c.Event.ChannelID }
func (c *AppendEvent) codeBody(k *coder) { c.Event.codeClient(k) }

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

func (q *ListEvents) codeQuery(c *coder) {
	c.channelScan(&q.HashSlot, &q.ChanRef, &q.BeforeSeq, &q.Limit)
}

func (p *EventPage) code(c *coder) {
	page(c, &p.Items, &p.More)
	c.uvarint(&p.Count)
	c.uvarint(&p.LastSeq)
}

func init() {
	registerCommand[AppendEvent]()
	registerQuery[ListEvents]()
	registerPageAnswer[EventPage](answerEventPage)
}
