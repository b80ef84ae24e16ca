package meta

import "slotmeta/internal/slotstore"

// Channels. A channel is identified by (type, id); its route key is the id,
// so every channel with one id — whatever its type — and its subscriber,
// deny and allow lists live in one hash slot. The counts of the three lists
// live on the channel row and change in the same batch as the list.

// Channel is a channel's row.
type Channel struct {
	Type          uint8 // 1–255
	ID            string
	Ban           bool
	Disband       bool
	SendBan       bool
	AllowStranger bool
	Large         bool
	Extra         string // opaque application data (JSON by convention), ≤ 64 KiB

	// Maintained by the list commands, never by the client.
	SubscriberCount uint64
	DenylistCount   uint64
	AllowlistCount  uint64
	// SubscriberVersion counts the changes of the subscriber list: one more
	// for every command that added or removed at least one subscriber.
	SubscriberVersion uint64
	// PendingProjection is the number of membership-projection records this
	// channel still owes the users' groups. Reserved for the membership
	// projector (outbox); always 0 until it exists.
	PendingProjection uint64

	CreatedAtMs int64
	UpdatedAtMs int64
	Revision    uint64
}

// EncodeChannel encodes c as a stored value.
func EncodeChannel(c *Channel) []byte {
	e := encoder{b: make([]byte, 0, 48+len(c.ID)+len(c.Extra))}
	e.u8(entityVersion)
	e.u8(c.Type)
	e.str(c.ID)
	e.bool(c.Ban)
	e.bool(c.Disband)
	e.bool(c.SendBan)
	e.bool(c.AllowStranger)
	e.bool(c.Large)
	e.str(c.Extra)
	e.uvarint(c.SubscriberCount)
	e.uvarint(c.DenylistCount)
	e.uvarint(c.AllowlistCount)
	e.uvarint(c.SubscriberVersion)
	e.uvarint(c.PendingProjection)
	e.varint(c.CreatedAtMs)
	e.varint(c.UpdatedAtMs)
	e.uvarint(c.Revision)
	return e.b
}

// DecodeChannel decodes a stored channel.
func DecodeChannel(b []byte) (*Channel, error) {
	d := decoder{b: b}
	decodeVersion(&d, "channel")
	c := &Channel{Type: d.u8(), ID: d.str(MaxKeyBytes)}
	c.Ban = d.bool()
	c.Disband = d.bool()
	c.SendBan = d.bool()
	c.AllowStranger = d.bool()
	c.Large = d.bool()
	c.Extra = d.str(MaxStringBytes)
	c.SubscriberCount = d.uvarint()
	c.DenylistCount = d.uvarint()
	c.AllowlistCount = d.uvarint()
	c.SubscriberVersion = d.uvarint()
	c.PendingProjection = d.uvarint()
	c.CreatedAtMs = d.varint()
	c.UpdatedAtMs = d.varint()
	c.Revision = d.uvarint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// ChannelInfo is what a client sets on a channel: identity, flags, extra.
type ChannelInfo struct {
	Type          uint8
	ID            string
	Ban           bool
	Disband       bool
	SendBan       bool
	AllowStranger bool
	Large         bool
	Extra         string
}

func encodeChannelInfo(e *encoder, c *ChannelInfo) {
	e.u8(c.Type)
	e.str(c.ID)
	e.bool(c.Ban)
	e.bool(c.Disband)
	e.bool(c.SendBan)
	e.bool(c.AllowStranger)
	e.bool(c.Large)
	e.str(c.Extra)
}

func decodeChannelInfo(d *decoder, c *ChannelInfo) {
	c.Type = d.u8()
	c.ID = d.str(MaxKeyBytes)
	c.Ban = d.bool()
	c.Disband = d.bool()
	c.SendBan = d.bool()
	c.AllowStranger = d.bool()
	c.Large = d.bool()
	c.Extra = d.str(MaxStringBytes)
}

const (
	OpCreateChannel Op = 20
	OpPutChannel    Op = 21
	OpDeleteChannel Op = 22
)

// CreateChannel creates a channel; conflict if it exists.
type CreateChannel struct {
	Header
	Channel ChannelInfo
}

// PutChannel creates a channel or replaces its flags and extra, keeping its
// creation time and its lists and counts.
type PutChannel struct {
	Header
	Channel ChannelInfo
}

// DeleteChannel deletes a channel with its subscriber, deny and allow lists;
// not_found when absent.
type DeleteChannel struct {
	Header
	ChannelType uint8
	ChannelID   string
}

func (*CreateChannel) Op() Op                  { return OpCreateChannel }
func (*PutChannel) Op() Op                     { return OpPutChannel }
func (*DeleteChannel) Op() Op                  { return OpDeleteChannel }
func (c *CreateChannel) RouteKey() string      { return c.Channel.ID }
func (c *PutChannel) RouteKey() string         { return c.Channel.ID }
func (c *DeleteChannel) RouteKey() string      { return c.ChannelID }
func (c *CreateChannel) encodeBody(e *encoder) { encodeChannelInfo(e, &c.Channel) }
func (c *CreateChannel) decodeBody(d *decoder) { decodeChannelInfo(d, &c.Channel) }
func (c *PutChannel) encodeBody(e *encoder)    { encodeChannelInfo(e, &c.Channel) }
func (c *PutChannel) decodeBody(d *decoder)    { decodeChannelInfo(d, &c.Channel) }
func (c *DeleteChannel) encodeBody(e *encoder) { e.u8(c.ChannelType); e.str(c.ChannelID) }
func (c *DeleteChannel) decodeBody(d *decoder) {
	c.ChannelType = d.u8()
	c.ChannelID = d.str(MaxKeyBytes)
}

// QueryGetChannel reads a channel.
const QueryGetChannel QueryKind = 20

// GetChannel reads one channel. Answer: *Channel or nil.
type GetChannel struct {
	HashSlot    slotstore.HashSlot
	ChannelType uint8
	ChannelID   string
}

func (*GetChannel) Kind() QueryKind                 { return QueryGetChannel }
func (q *GetChannel) RouteSlot() slotstore.HashSlot { return q.HashSlot }
func (q *GetChannel) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.u8(q.ChannelType)
	e.str(q.ChannelID)
}
func (q *GetChannel) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.ChannelType = d.u8()
	q.ChannelID = d.str(MaxKeyBytes)
}

const answerChannel = 20

func init() {
	registerCommand(OpCreateChannel, func() Command { return &CreateChannel{} })
	registerCommand(OpPutChannel, func() Command { return &PutChannel{} })
	registerCommand(OpDeleteChannel, func() Command { return &DeleteChannel{} })
	registerQuery(QueryGetChannel, func() Query { return &GetChannel{} })
	registerAnswer(answerChannel, (*Channel)(nil),
		func(e *encoder, v any) { e.bytes(EncodeChannel(v.(*Channel))) },
		func(d *decoder) (any, error) { return DecodeChannel(d.bytes(MaxEntryBytes)) })
}
