package meta

import "slotmeta/internal/slotstore"

// Channel lists: a channel's subscribers, denylist and allowlist. Each is a
// set of uids stored with the channel (route key: the channel id), one row
// per member, in uid order. Every change updates the list's count on the
// channel row in the same batch.

// ChannelList names one of a channel's lists.
type ChannelList uint8

const (
	ListSubscribers ChannelList = 1
	ListDenylist    ChannelList = 2
	ListAllowlist   ChannelList = 3
)

// MaxListUIDs bounds the uids of one list command.
const MaxListUIDs = 1000

// Valid reports whether l names a list.
func (l ChannelList) Valid() bool { return l >= ListSubscribers && l <= ListAllowlist }

// Table is the storage table of l.
func (l ChannelList) Table() Table {
	switch l {
	case ListSubscribers:
		return TableSubscriber
	case ListDenylist:
		return TableDenylist
	case ListAllowlist:
		return TableAllowlist
	}
	return 0
}

// String is the list's name in the API.
func (l ChannelList) String() string {
	switch l {
	case ListSubscribers:
		return "subscribers"
	case ListDenylist:
		return "denylist"
	case ListAllowlist:
		return "allowlist"
	}
	return "unknown list"
}

// Count returns a pointer to the channel's count of list l (nil for an
// invalid l).
func (c *Channel) Count(l ChannelList) *uint64 {
	switch l {
	case ListSubscribers:
		return &c.SubscriberCount
	case ListDenylist:
		return &c.DenylistCount
	case ListAllowlist:
		return &c.AllowlistCount
	}
	return nil
}

// ChannelMember is one member row of a channel list.
type ChannelMember struct {
	UID       string
	AddedAtMs int64
}

// EncodeChannelMember encodes m as a stored value.
func EncodeChannelMember(m *ChannelMember) []byte {
	e := encoder{b: make([]byte, 0, 12+len(m.UID))}
	e.u8(entityVersion)
	e.str(m.UID)
	e.varint(m.AddedAtMs)
	return e.b
}

// DecodeChannelMember decodes a stored member row.
func DecodeChannelMember(b []byte) (*ChannelMember, error) {
	d := decoder{b: b}
	decodeVersion(&d, "channel member")
	m := &ChannelMember{UID: d.str(MaxKeyBytes)}
	m.AddedAtMs = d.varint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return m, nil
}

// ListChange is the result value of a list command: how many uids it
// actually added or removed, and the list's count after it.
type ListChange struct {
	Changed uint64
	Count   uint64
}

// EncodeListChange encodes a list command's result value.
func EncodeListChange(c *ListChange) []byte {
	e := encoder{b: make([]byte, 0, 12)}
	e.u8(entityVersion)
	e.uvarint(c.Changed)
	e.uvarint(c.Count)
	return e.b
}

// DecodeListChange decodes EncodeListChange's output.
func DecodeListChange(b []byte) (*ListChange, error) {
	d := decoder{b: b}
	decodeVersion(&d, "list change")
	c := &ListChange{Changed: d.uvarint(), Count: d.uvarint()}
	if err := d.err(); err != nil {
		return nil, err
	}
	return c, nil
}

const (
	OpAddChannelMembers    Op = 23
	OpRemoveChannelMembers Op = 24
	OpDeleteChannelMember  Op = 25
)

// ChannelMembers is the body of the set commands: uids of one list of one
// channel. Repeated uids are fine (set semantics).
type ChannelMembers struct {
	List        ChannelList
	ChannelType uint8
	ChannelID   string
	UIDs        []string
}

// AddChannelMembers adds uids to a list (those already in it are left
// alone); not_found when the channel does not exist. Result value: ListChange.
type AddChannelMembers struct {
	Header
	ChannelMembers
}

// RemoveChannelMembers removes uids from a list (absent ones are ignored);
// not_found when the channel does not exist. Result value: ListChange.
type RemoveChannelMembers struct {
	Header
	ChannelMembers
}

// DeleteChannelMember removes one uid from a list; not_found when the
// channel does not exist or the uid is not in the list.
type DeleteChannelMember struct {
	Header
	List        ChannelList
	ChannelType uint8
	ChannelID   string
	UID         string
}

func (*AddChannelMembers) Op() Op                { return OpAddChannelMembers }
func (*RemoveChannelMembers) Op() Op             { return OpRemoveChannelMembers }
func (*DeleteChannelMember) Op() Op              { return OpDeleteChannelMember }
func (c *AddChannelMembers) RouteKey() string    { return c.ChannelID }
func (c *RemoveChannelMembers) RouteKey() string { return c.ChannelID }
func (c *DeleteChannelMember) RouteKey() string  { return c.ChannelID }

func decodeListKind(d *decoder) ChannelList {
	l := ChannelList(d.u8())
	if d.err() == nil && !l.Valid() {
		d.fail("unknown channel list %d", l)
	}
	return l
}

func (m *ChannelMembers) encode(e *encoder) {
	e.u8(uint8(m.List))
	e.u8(m.ChannelType)
	e.str(m.ChannelID)
	e.uvarint(uint64(len(m.UIDs)))
	for _, u := range m.UIDs {
		e.str(u)
	}
}

func (m *ChannelMembers) decode(d *decoder) {
	m.List = decodeListKind(d)
	m.ChannelType = d.u8()
	m.ChannelID = d.str(MaxKeyBytes)
	n := d.uvarint()
	if n > MaxListUIDs {
		d.fail("%d uids in one list command", n)
		return
	}
	if n == 0 {
		m.UIDs = nil
		return
	}
	m.UIDs = make([]string, 0, min(n, uint64(len(d.b))))
	for i := uint64(0); i < n && d.err() == nil; i++ {
		m.UIDs = append(m.UIDs, d.str(MaxKeyBytes))
	}
}

func (c *AddChannelMembers) encodeBody(e *encoder)    { c.ChannelMembers.encode(e) }
func (c *AddChannelMembers) decodeBody(d *decoder)    { c.ChannelMembers.decode(d) }
func (c *RemoveChannelMembers) encodeBody(e *encoder) { c.ChannelMembers.encode(e) }
func (c *RemoveChannelMembers) decodeBody(d *decoder) { c.ChannelMembers.decode(d) }
func (c *DeleteChannelMember) encodeBody(e *encoder) {
	e.u8(uint8(c.List))
	e.u8(c.ChannelType)
	e.str(c.ChannelID)
	e.str(c.UID)
}
func (c *DeleteChannelMember) decodeBody(d *decoder) {
	c.List = decodeListKind(d)
	c.ChannelType = d.u8()
	c.ChannelID = d.str(MaxKeyBytes)
	c.UID = d.str(MaxKeyBytes)
}

const (
	QueryScanChannelList  QueryKind = 21
	QueryGetChannelMember QueryKind = 22
)

// ScanChannelList lists one list of a channel after AfterUID ("" from the
// start), in uid order. Answer: *ChannelMemberPage, or nil when the channel
// does not exist.
type ScanChannelList struct {
	HashSlot    slotstore.HashSlot
	List        ChannelList
	ChannelType uint8
	ChannelID   string
	AfterUID    string
	Limit       int
}

// ChannelMemberPage is ScanChannelList's answer; More is set when the scan
// stopped at Limit.
type ChannelMemberPage struct {
	Members []*ChannelMember
	More    bool
}

// GetChannelMember tests whether UID is in a list. Answer: *ChannelMember,
// or nil when it is not (or the channel does not exist).
type GetChannelMember struct {
	HashSlot    slotstore.HashSlot
	List        ChannelList
	ChannelType uint8
	ChannelID   string
	UID         string
}

func (*ScanChannelList) Kind() QueryKind                  { return QueryScanChannelList }
func (*GetChannelMember) Kind() QueryKind                 { return QueryGetChannelMember }
func (q *ScanChannelList) RouteSlot() slotstore.HashSlot  { return q.HashSlot }
func (q *GetChannelMember) RouteSlot() slotstore.HashSlot { return q.HashSlot }

func (q *ScanChannelList) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.u8(uint8(q.List))
	e.u8(q.ChannelType)
	e.str(q.ChannelID)
	e.str(q.AfterUID)
	encodeLimit(e, q.Limit)
}

func (q *ScanChannelList) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.List = decodeListKind(d)
	q.ChannelType = d.u8()
	q.ChannelID = d.str(MaxKeyBytes)
	q.AfterUID = d.str(MaxKeyBytes)
	q.Limit = decodeLimit(d)
}

func (q *GetChannelMember) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.u8(uint8(q.List))
	e.u8(q.ChannelType)
	e.str(q.ChannelID)
	e.str(q.UID)
}

func (q *GetChannelMember) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.List = decodeListKind(d)
	q.ChannelType = d.u8()
	q.ChannelID = d.str(MaxKeyBytes)
	q.UID = d.str(MaxKeyBytes)
}

const (
	answerChannelMemberPage = 21
	answerChannelMember     = 22
)

func init() {
	registerCommand(OpAddChannelMembers, func() Command { return &AddChannelMembers{} })
	registerCommand(OpRemoveChannelMembers, func() Command { return &RemoveChannelMembers{} })
	registerCommand(OpDeleteChannelMember, func() Command { return &DeleteChannelMember{} })
	registerQuery(QueryScanChannelList, func() Query { return &ScanChannelList{} })
	registerQuery(QueryGetChannelMember, func() Query { return &GetChannelMember{} })
	registerAnswer(answerChannelMemberPage, (*ChannelMemberPage)(nil),
		func(e *encoder, v any) {
			p := v.(*ChannelMemberPage)
			encodeItems(e, p.Members, EncodeChannelMember)
			e.bool(p.More)
		},
		func(d *decoder) (any, error) {
			p := &ChannelMemberPage{Members: decodeItems(d, DecodeChannelMember)}
			p.More = d.bool()
			return p, d.err()
		})
	registerAnswer(answerChannelMember, (*ChannelMember)(nil),
		func(e *encoder, v any) { e.bytes(EncodeChannelMember(v.(*ChannelMember))) },
		func(d *decoder) (any, error) { return DecodeChannelMember(d.bytes(MaxEntryBytes)) })
}
