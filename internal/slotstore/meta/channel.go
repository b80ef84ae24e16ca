package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

// Channels. A channel is identified by (type, id); its route key is the id,
// so every channel with one id — whatever its type — and its subscriber,
// deny and allow lists live in one hash slot. The counts of the three lists
// live on the channel row and change in the same batch as the list.

// Channel is a channel's row: what a client sets on it, then what the
// list commands keep.
type Channel struct {
	ChannelInfo

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

func (ch *Channel) code(c *coder) {
	c.version(entityVersion, "channel")
	ch.ChannelInfo.code(c)
	c.uvarint(&ch.SubscriberCount)
	c.uvarint(&ch.DenylistCount)
	c.uvarint(&ch.AllowlistCount)
	c.uvarint(&ch.SubscriberVersion)
	c.uvarint(&ch.PendingProjection)
	c.stamps(&ch.CreatedAtMs, &ch.UpdatedAtMs, &ch.Revision)
}

// EncodeChannel encodes c as a stored value.
func EncodeChannel(c *Channel) []byte { return encodeEntity(c) }

// DecodeChannel decodes a stored channel.
func DecodeChannel(b []byte) (*Channel, error) { return decodeEntity[Channel](b) }

// ChannelInfo is what a client sets on a channel: identity, flags, extra.
type ChannelInfo struct {
	Type          uint8 // 1–255
	ID            string
	Ban           bool
	Disband       bool
	SendBan       bool
	AllowStranger bool
	Large         bool
	Extra         string // opaque application data (JSON by convention), ≤ 64 KiB
}

func (ci *ChannelInfo) code(c *coder) {
	c.channelRef(&ci.Type, &ci.ID)
	c.bool(&ci.Ban)
	c.bool(&ci.Disband)
	c.bool(&ci.SendBan)
	c.bool(&ci.AllowStranger)
	c.bool(&ci.Large)
	c.str(&ci.Extra, MaxStringBytes, "extra")
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

func (*CreateChannel) Op() Op              { return OpCreateChannel }
func (*PutChannel) Op() Op                 { return OpPutChannel }
func (*DeleteChannel) Op() Op              { return OpDeleteChannel }
func (c *CreateChannel) RouteKey() string  { return c.Channel.ID }
func (c *PutChannel) RouteKey() string     { return c.Channel.ID }
func (c *DeleteChannel) RouteKey() string  { return c.ChannelID }
func (c *CreateChannel) codeBody(k *coder) { c.Channel.code(k) }
func (c *PutChannel) codeBody(k *coder)    { c.Channel.code(k) }
func (c *DeleteChannel) codeBody(k *coder) { k.channelRef(&c.ChannelType, &c.ChannelID) }

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
func (q *GetChannel) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.channelRef(&q.ChannelType, &q.ChannelID)
}

const answerChannel = 20

func init() {
	registerCommand[CreateChannel]()
	registerCommand[PutChannel]()
	registerCommand[DeleteChannel]()
	registerQuery[GetChannel]()
	registerEntityAnswer[Channel](answerChannel)
}
