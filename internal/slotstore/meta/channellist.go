package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

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

func (m *ChannelMember) code(c *coder) {
	c.version(entityVersion, "channel member")
	c.str(&m.UID, MaxKeyBytes, "uid")
	c.varint(&m.AddedAtMs)
}

// EncodeChannelMember encodes m as a stored value.
func EncodeChannelMember(m *ChannelMember) []byte { return encodeEntity(m) }

// DecodeChannelMember decodes a stored member row.
func DecodeChannelMember(b []byte) (*ChannelMember, error) { return decodeEntity[ChannelMember](b) }

// ListChange is the result value of a list command: how many uids it
// actually added or removed, and the list's count after it.
type ListChange struct {
	Changed uint64
	Count   uint64
}

func (l *ListChange) code(c *coder) {
	c.version(entityVersion, "list change")
	c.uvarint(&l.Changed)
	c.uvarint(&l.Count)
}

// EncodeListChange encodes a list command's result value.
func EncodeListChange(c *ListChange) []byte { return encodeEntity(c) }

// DecodeListChange decodes EncodeListChange's output.
func DecodeListChange(b []byte) (*ListChange, error) { return decodeEntity[ListChange](b) }

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

// listRef codes which list of which channel: list, type, id.
func (c *coder) listRef(l *ChannelList, channelType *uint8, channelID *string) {
	c.u8((*uint8)(l))
	if !l.Valid() {
		c.fail("unknown channel list %d", *l)
	}
	c.channelRef(channelType, channelID)
}

func (m *ChannelMembers) code(c *coder) {
	c.listRef(&m.List, &m.ChannelType, &m.ChannelID)
	list(c, &m.UIDs, MaxListUIDs, "uids in one list command", codeUID)
}

// codeUID codes one uid of a list.
func codeUID(c *coder, uid *string) { c.str(uid, MaxKeyBytes, "uid") }

func (c *AddChannelMembers) codeBody(k *coder)    { c.ChannelMembers.code(k) }
func (c *RemoveChannelMembers) codeBody(k *coder) { c.ChannelMembers.code(k) }

func (c *DeleteChannelMember) codeBody(k *coder) {
	k.listRef(&c.List, &c.ChannelType, &c.ChannelID)
	k.str(&c.UID, MaxKeyBytes, "uid")
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

func (q *ScanChannelList) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.listRef(&q.List, &q.ChannelType, &q.ChannelID)
	c.str(&q.AfterUID, MaxKeyBytes, "after uid")
	c.pageLimit(&q.Limit)
}

func (q *GetChannelMember) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.listRef(&q.List, &q.ChannelType, &q.ChannelID)
	c.str(&q.UID, MaxKeyBytes, "uid")
}

func (p *ChannelMemberPage) code(c *coder) { page(c, &p.Members, &p.More) }

const (
	answerChannelMemberPage = 21
	answerChannelMember     = 22
)

func init() {
	registerCommand[AddChannelMembers]()
	registerCommand[RemoveChannelMembers]()
	registerCommand[DeleteChannelMember]()
	registerQuery[ScanChannelList]()
	registerQuery[GetChannelMember]()
	registerAnswers[ChannelMember, ChannelMemberPage](answerChannelMember, answerChannelMemberPage)
}
