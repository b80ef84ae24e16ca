package meta

import "slotmeta/internal/slotstore"

// Membership is a user's join state in one channel: the "conversation" row
// of an IM client. Its route key is UID; it lives in the user's hash slot,
// under TableMembership, and — unless it is a tombstone — in the user's
// activity index (TableMembershipActivity, newest activation first), which
// every write keeps in step in the same batch.
//
// ReadSeq (the badge floor) and DeletedToSeq (hidden up to) never move
// backwards, whatever command writes the row.
type Membership struct {
	UID           string
	ChannelType   uint8
	ChannelID     string
	JoinSeq       uint64 // the first message seq the member may see
	ReadSeq       uint64 // read up to (badge floor); monotonic
	DeletedToSeq  uint64 // hidden up to; monotonic
	ActivatedAtMs int64  // last activation; the activity index's order
	Tombstone     bool   // left the channel: hidden from the list, still readable
	CreatedAtMs   int64
	UpdatedAtMs   int64
	Revision      uint64
	// ProjectedVersion is the channel's subscriber version that last
	// projected into this row (the outbox fence): an older projection is
	// ignored, so a replayed one never undoes a newer change.
	ProjectedVersion uint64
}

// EncodeMembership encodes m as a stored value.
func EncodeMembership(m *Membership) []byte {
	e := encoder{b: make([]byte, 0, 48+len(m.UID)+len(m.ChannelID))}
	e.u8(entityVersion)
	e.str(m.UID)
	encChannelRef(&e, m.ChannelType, m.ChannelID)
	e.uvarint(m.JoinSeq)
	e.uvarint(m.ReadSeq)
	e.uvarint(m.DeletedToSeq)
	e.varint(m.ActivatedAtMs)
	e.bool(m.Tombstone)
	e.varint(m.CreatedAtMs)
	e.varint(m.UpdatedAtMs)
	e.uvarint(m.Revision)
	e.uvarint(m.ProjectedVersion)
	return e.b
}

// DecodeMembership decodes a stored membership. Bytes after the known
// fields (appended by a newer writer) are ignored.
func DecodeMembership(b []byte) (*Membership, error) {
	d := decoder{b: b}
	if v := d.u8(); v != entityVersion && d.err() == nil {
		d.fail("unknown membership version %d", v)
	}
	m := &Membership{UID: d.str(MaxKeyBytes)}
	m.ChannelType, m.ChannelID = decChannelRef(&d)
	m.JoinSeq = d.uvarint()
	m.ReadSeq = d.uvarint()
	m.DeletedToSeq = d.uvarint()
	m.ActivatedAtMs = d.varint()
	m.Tombstone = d.bool()
	m.CreatedAtMs = d.varint()
	m.UpdatedAtMs = d.varint()
	m.Revision = d.uvarint()
	if !d.done() { // appended later: absent in rows written before
		m.ProjectedVersion = d.uvarint()
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return m, nil
}

// Membership commands (ops 40–46; 47–51 are CMD bindings, 52–59 are left
// for the channel → membership outbox).
const (
	OpPutMembership      Op = 40
	OpDeleteMembership   Op = 41
	OpReadMembership     Op = 42
	OpHideMembership     Op = 43
	OpActivateMembership Op = 44
)

// UserChannel names one user's row about one channel: the route key is UID.
type UserChannel struct {
	UID         string
	ChannelType uint8
	ChannelID   string
}

func (u *UserChannel) encodeRef(e *encoder) {
	e.str(u.UID)
	encChannelRef(e, u.ChannelType, u.ChannelID)
}

func (u *UserChannel) decodeRef(d *decoder) {
	u.UID = d.str(MaxKeyBytes)
	u.ChannelType, u.ChannelID = decChannelRef(d)
}

// PutMembership creates or updates a membership. JoinSeq and Tombstone are
// set as given; ReadSeq and DeletedToSeq only move forward (the stored value
// wins when it is higher); ActivatedAtMs is set when HasActivatedAt, else
// kept (a new row takes the command's time).
type PutMembership struct {
	Header
	UserChannel
	JoinSeq        uint64
	ReadSeq        uint64
	DeletedToSeq   uint64
	HasActivatedAt bool
	ActivatedAtMs  int64
	Tombstone      bool
}

// DeleteMembership removes a membership row and its index entry.
type DeleteMembership struct {
	Header
	UserChannel
}

// ReadMembership raises the badge floor to ReadSeq; a lower or equal value
// changes nothing and succeeds with the stored row.
type ReadMembership struct {
	Header
	UserChannel
	ReadSeq uint64
}

// HideMembership raises DeletedToSeq to ToSeq; a lower or equal value
// changes nothing and succeeds with the stored row.
type HideMembership struct {
	Header
	UserChannel
	ToSeq uint64
}

// ActivateMembership sets ActivatedAtMs to the command's time, which moves
// the membership to the front of the user's activity index.
type ActivateMembership struct {
	Header
	UserChannel
}

func (*PutMembership) Op() Op      { return OpPutMembership }
func (*DeleteMembership) Op() Op   { return OpDeleteMembership }
func (*ReadMembership) Op() Op     { return OpReadMembership }
func (*HideMembership) Op() Op     { return OpHideMembership }
func (*ActivateMembership) Op() Op { return OpActivateMembership }

func (c *PutMembership) RouteKey() string      { return c.UID }
func (c *DeleteMembership) RouteKey() string   { return c.UID }
func (c *ReadMembership) RouteKey() string     { return c.UID }
func (c *HideMembership) RouteKey() string     { return c.UID }
func (c *ActivateMembership) RouteKey() string { return c.UID }

func (c *PutMembership) encodeBody(e *encoder) {
	c.encodeRef(e)
	e.uvarint(c.JoinSeq)
	e.uvarint(c.ReadSeq)
	e.uvarint(c.DeletedToSeq)
	e.bool(c.HasActivatedAt)
	e.varint(c.ActivatedAtMs)
	e.bool(c.Tombstone)
}

func (c *PutMembership) decodeBody(d *decoder) {
	c.decodeRef(d)
	c.JoinSeq = d.uvarint()
	c.ReadSeq = d.uvarint()
	c.DeletedToSeq = d.uvarint()
	c.HasActivatedAt = d.bool()
	c.ActivatedAtMs = d.varint()
	c.Tombstone = d.bool()
}

func (c *DeleteMembership) encodeBody(e *encoder)   { c.encodeRef(e) }
func (c *DeleteMembership) decodeBody(d *decoder)   { c.decodeRef(d) }
func (c *ActivateMembership) encodeBody(e *encoder) { c.encodeRef(e) }
func (c *ActivateMembership) decodeBody(d *decoder) { c.decodeRef(d) }
func (c *ReadMembership) encodeBody(e *encoder)     { c.encodeRef(e); e.uvarint(c.ReadSeq) }
func (c *ReadMembership) decodeBody(d *decoder)     { c.decodeRef(d); c.ReadSeq = d.uvarint() }
func (c *HideMembership) encodeBody(e *encoder)     { c.encodeRef(e); e.uvarint(c.ToSeq) }
func (c *HideMembership) decodeBody(d *decoder)     { c.decodeRef(d); c.ToSeq = d.uvarint() }

// Membership queries and answers.
const (
	QueryGetMembership   QueryKind = 40
	QueryListMemberships QueryKind = 41

	answerMembership     = 40
	answerMembershipPage = 41
)

// GetMembership reads one membership (tombstones included). Answer:
// *Membership or nil.
type GetMembership struct {
	HashSlot slotstore.HashSlot
	UserChannel
}

// ActivityPos is a position in a user's activity index: the entry of the
// membership of (ChannelType, ChannelID) activated at AtMs.
type ActivityPos struct {
	AtMs        int64
	ChannelType uint8
	ChannelID   string
}

// ListMemberships lists a user's memberships that are not tombstones,
// newest activation first (ties in channel order), starting after After
// when it is set. Answer: *MembershipPage.
type ListMemberships struct {
	HashSlot slotstore.HashSlot
	UID      string
	After    *ActivityPos
	Limit    int
}

// MembershipPage is ListMemberships' answer; More is set when the listing
// stopped at Limit (continue after the last item's activity position).
type MembershipPage struct {
	Items []*Membership
	More  bool
}

func (*GetMembership) Kind() QueryKind   { return QueryGetMembership }
func (*ListMemberships) Kind() QueryKind { return QueryListMemberships }

func (q *GetMembership) RouteSlot() slotstore.HashSlot   { return q.HashSlot }
func (q *ListMemberships) RouteSlot() slotstore.HashSlot { return q.HashSlot }

func (q *GetMembership) encodeQuery(e *encoder) { e.u16(uint16(q.HashSlot)); q.encodeRef(e) }
func (q *GetMembership) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.decodeRef(d)
}

func (q *ListMemberships) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.str(q.UID)
	e.bool(q.After != nil)
	if q.After != nil {
		e.varint(q.After.AtMs)
		encChannelRef(e, q.After.ChannelType, q.After.ChannelID)
	}
	encLimit(e, q.Limit)
}

func (q *ListMemberships) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.UID = d.str(MaxKeyBytes)
	if d.bool() {
		p := &ActivityPos{AtMs: d.varint()}
		p.ChannelType, p.ChannelID = decChannelRef(d)
		q.After = p
	}
	q.Limit = decLimit(d)
}

func encodeMembershipPage(e *encoder, v any) {
	p := v.(*MembershipPage)
	e.uvarint(uint64(len(p.Items)))
	for _, m := range p.Items {
		e.bytes(EncodeMembership(m))
	}
	e.bool(p.More)
}

func decodeMembershipPage(d *decoder) (any, error) {
	p := &MembershipPage{}
	var err error
	p.Items, err = decPageItems(d, DecodeMembership)
	if err != nil {
		return nil, err
	}
	p.More = d.bool()
	return p, d.err()
}

func init() {
	registerCommand(OpPutMembership, func() Command { return &PutMembership{} })
	registerCommand(OpDeleteMembership, func() Command { return &DeleteMembership{} })
	registerCommand(OpReadMembership, func() Command { return &ReadMembership{} })
	registerCommand(OpHideMembership, func() Command { return &HideMembership{} })
	registerCommand(OpActivateMembership, func() Command { return &ActivateMembership{} })
	registerQuery(QueryGetMembership, func() Query { return &GetMembership{} })
	registerQuery(QueryListMemberships, func() Query { return &ListMemberships{} })
	registerAnswer(answerMembership, (*Membership)(nil),
		func(e *encoder, v any) { e.bytes(EncodeMembership(v.(*Membership))) },
		func(d *decoder) (any, error) { return DecodeMembership(d.bytes(MaxEntryBytes)) })
	registerAnswer(answerMembershipPage, (*MembershipPage)(nil), encodeMembershipPage, decodeMembershipPage)
}
