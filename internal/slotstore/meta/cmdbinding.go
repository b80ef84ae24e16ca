package meta

import "slotmeta/internal/slotstore"

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

// EncodeCmdBinding encodes b as a stored value.
func EncodeCmdBinding(b *CmdBinding) []byte {
	e := encoder{b: make([]byte, 0, 40+len(b.UID)+len(b.ChannelID))}
	e.u8(entityVersion)
	e.str(b.UID)
	encChannelRef(&e, b.ChannelType, b.ChannelID)
	e.uvarint(b.StartSeq)
	e.uvarint(b.AckSeq)
	e.varint(b.CreatedAtMs)
	e.varint(b.UpdatedAtMs)
	e.uvarint(b.Revision)
	return e.b
}

// DecodeCmdBinding decodes a stored CMD binding (appended fields ignored).
func DecodeCmdBinding(raw []byte) (*CmdBinding, error) {
	d := decoder{b: raw}
	if v := d.u8(); v != entityVersion && d.err() == nil {
		d.fail("unknown cmd binding version %d", v)
	}
	b := &CmdBinding{UID: d.str(MaxKeyBytes)}
	b.ChannelType, b.ChannelID = decChannelRef(&d)
	b.StartSeq = d.uvarint()
	b.AckSeq = d.uvarint()
	b.CreatedAtMs = d.varint()
	b.UpdatedAtMs = d.varint()
	b.Revision = d.uvarint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return b, nil
}

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

func (c *PutCmdBinding) RouteKey() string    { return c.UID }
func (c *DeleteCmdBinding) RouteKey() string { return c.UID }
func (c *AckCmdBinding) RouteKey() string    { return c.UID }

func (c *PutCmdBinding) encodeBody(e *encoder)    { c.encodeRef(e); e.uvarint(c.StartSeq) }
func (c *PutCmdBinding) decodeBody(d *decoder)    { c.decodeRef(d); c.StartSeq = d.uvarint() }
func (c *DeleteCmdBinding) encodeBody(e *encoder) { c.encodeRef(e) }
func (c *DeleteCmdBinding) decodeBody(d *decoder) { c.decodeRef(d) }
func (c *AckCmdBinding) encodeBody(e *encoder)    { c.encodeRef(e); e.uvarint(c.AckSeq) }
func (c *AckCmdBinding) decodeBody(d *decoder)    { c.decodeRef(d); c.AckSeq = d.uvarint() }

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

func (q *GetCmdBinding) encodeQuery(e *encoder) { e.u16(uint16(q.HashSlot)); q.encodeRef(e) }
func (q *GetCmdBinding) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.decodeRef(d)
}

func (q *ListCmdBindings) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.str(q.UID)
	e.bool(q.HasAfter)
	encChannelRef(e, q.AfterType, q.AfterID)
	encLimit(e, q.Limit)
}

func (q *ListCmdBindings) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.UID = d.str(MaxKeyBytes)
	q.HasAfter = d.bool()
	q.AfterType, q.AfterID = decChannelRef(d)
	q.Limit = decLimit(d)
}

func encodeCmdBindingPage(e *encoder, v any) {
	p := v.(*CmdBindingPage)
	e.uvarint(uint64(len(p.Items)))
	for _, b := range p.Items {
		e.bytes(EncodeCmdBinding(b))
	}
	e.bool(p.More)
}

func decodeCmdBindingPage(d *decoder) (any, error) {
	p := &CmdBindingPage{}
	var err error
	if p.Items, err = decPageItems(d, DecodeCmdBinding); err != nil {
		return nil, err
	}
	p.More = d.bool()
	return p, d.err()
}

func init() {
	registerCommand(OpPutCmdBinding, func() Command { return &PutCmdBinding{} })
	registerCommand(OpDeleteCmdBinding, func() Command { return &DeleteCmdBinding{} })
	registerCommand(OpAckCmdBinding, func() Command { return &AckCmdBinding{} })
	registerQuery(QueryGetCmdBinding, func() Query { return &GetCmdBinding{} })
	registerQuery(QueryListCmdBindings, func() Query { return &ListCmdBindings{} })
	registerAnswer(answerCmdBinding, (*CmdBinding)(nil),
		func(e *encoder, v any) { e.bytes(EncodeCmdBinding(v.(*CmdBinding))) },
		func(d *decoder) (any, error) { return DecodeCmdBinding(d.bytes(MaxEntryBytes)) })
	registerAnswer(answerCmdBindingPage, (*CmdBindingPage)(nil), encodeCmdBindingPage, decodeCmdBindingPage)
}
