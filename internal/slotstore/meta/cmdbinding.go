package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

// CmdBinding binds a user to a channel's CMD (command message) stream,
// independently of the user's normal membership. Its route key is UID; it
// lives under TableCmdBinding in the user's hash slot. AckSeq never moves
// backwards.
type CmdBinding struct {
	UID         string
	ChannelType uint8
	ChannelID   string
	StartSeq    uint64 // the first CMD seq delivered to the user
	AckSeq      uint64 // acknowledged up to; monotonic
	CreatedAtMs int64
	UpdatedAtMs int64
	Revision    uint64
}

func (b *CmdBinding) code(c *coder) {
	c.version(entityVersion, "cmd binding")
	c.str(&b.UID, MaxKeyBytes, "uid")
	c.channelRef(&b.ChannelType, &b.ChannelID)
	c.uvarint(&b.StartSeq)
	c.uvarint(&b.AckSeq)
	c.stamps(&b.CreatedAtMs, &b.UpdatedAtMs, &b.Revision)
}

// EncodeCmdBinding encodes b as a stored value.
func EncodeCmdBinding(b *CmdBinding) []byte { return encodeEntity(b) }

// DecodeCmdBinding decodes a stored CMD binding (appended fields ignored).
func DecodeCmdBinding(raw []byte) (*CmdBinding, error) { return decodeEntity[CmdBinding](raw) }

// CMD binding commands (ops 47–51).
const (
	OpPutCmdBinding    Op = 47
	OpDeleteCmdBinding Op = 48
	OpAckCmdBinding    Op = 49
)

// PutCmdBinding creates or updates a binding: StartSeq is set as given, a
// stored AckSeq is kept.
type PutCmdBinding struct {
	Header
	UserChannel
	StartSeq uint64
}

// DeleteCmdBinding removes a binding.
type DeleteCmdBinding struct {
	Header
	UserChannel
}

// AckCmdBinding raises AckSeq; a lower or equal value changes nothing and
// succeeds with the stored row.
type AckCmdBinding struct {
	Header
	UserChannel
	AckSeq uint64
}

func (*PutCmdBinding) Op() Op    { return OpPutCmdBinding }
func (*DeleteCmdBinding) Op() Op { return OpDeleteCmdBinding }
func (*AckCmdBinding) Op() Op    { return OpAckCmdBinding }

func (c *PutCmdBinding) codeBody(k *coder)    { c.UserChannel.code(k); k.uvarint(&c.StartSeq) }
func (c *DeleteCmdBinding) codeBody(k *coder) { c.UserChannel.code(k) }
func (c *AckCmdBinding) codeBody(k *coder)    { c.UserChannel.code(k); k.uvarint(&c.AckSeq) }

// CMD binding queries and answers.
const (
	QueryGetCmdBinding   QueryKind = 47
	QueryListCmdBindings QueryKind = 48

	answerCmdBinding     = 47
	answerCmdBindingPage = 48
)

// GetCmdBinding reads one binding. Answer: *CmdBinding or nil.
type GetCmdBinding struct {
	HashSlot slotstore.HashSlot
	UserChannel
}

// ListCmdBindings lists a user's bindings in (channel type, channel id)
// order, after (AfterType, AfterID) when HasAfter. Answer: *CmdBindingPage.
type ListCmdBindings struct {
	HashSlot  slotstore.HashSlot
	UID       string
	HasAfter  bool
	AfterType uint8
	AfterID   string
	Limit     int
}

// CmdBindingPage is ListCmdBindings' answer.
type CmdBindingPage struct {
	Items []*CmdBinding
	More  bool
}

func (*GetCmdBinding) Kind() QueryKind   { return QueryGetCmdBinding }
func (*ListCmdBindings) Kind() QueryKind { return QueryListCmdBindings }

func (q *GetCmdBinding) RouteSlot() slotstore.HashSlot   { return q.HashSlot }
func (q *ListCmdBindings) RouteSlot() slotstore.HashSlot { return q.HashSlot }

func (q *GetCmdBinding) codeQuery(c *coder) { c.slot(&q.HashSlot); q.UserChannel.code(c) }

func (q *ListCmdBindings) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.str(&q.UID, MaxKeyBytes, "uid")
	c.bool(&q.HasAfter)
	c.channelRef(&q.AfterType, &q.AfterID)
	c.pageLimit(&q.Limit)
}

func (p *CmdBindingPage) code(c *coder) { page(c, &p.Items, &p.More) }

func init() {
	registerCommand[PutCmdBinding]()
	registerCommand[DeleteCmdBinding]()
	registerCommand[AckCmdBinding]()
	registerQuery[GetCmdBinding]()
	registerQuery[ListCmdBindings]()
	registerAnswers[CmdBinding, CmdBindingPage](answerCmdBinding, answerCmdBindingPage)
}
