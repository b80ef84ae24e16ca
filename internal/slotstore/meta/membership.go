package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

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

func (m *Membership) code(c *coder) {
	c.version(entityVersion, "membership")
	c.str(&m.UID, MaxKeyBytes, "uid")
	c.channelRef(&m.ChannelType, &m.ChannelID)
	c.uvarint(&m.JoinSeq)
	c.uvarint(&m.ReadSeq)
	c.uvarint(&m.DeletedToSeq)
	c.varint(&m.ActivatedAtMs)
	c.bool(&m.Tombstone)
	c.stamps(&m.CreatedAtMs, &m.UpdatedAtMs, &m.Revision)
	if c.more() { // appended later: absent in rows written before
		c.uvarint(&m.ProjectedVersion)
	}
}

// EncodeMembership encodes m as a stored value.
func EncodeMembership(m *Membership) []byte { return encodeEntity(m) }

// DecodeMembership decodes a stored membership. Bytes after the known
// fields (appended by a newer writer) are ignored.
func DecodeMembership(b []byte) (*Membership, error) { return decodeEntity[Membership](b) }

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

// RouteKey is the user's: every command about a user's row about a channel
// routes by it.
func (u *UserChannel) RouteKey() string { return u.UID }

func (u *UserChannel) code(c *coder) {
	c.str(&u.UID, MaxKeyBytes, "uid")
	c.channelRef(&u.ChannelType, &u.ChannelID)
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

func (c *PutMembership) codeBody(k *coder) {
	c.UserChannel.code(k)
	k.uvarint(&c.JoinSeq)
	k.uvarint(&c.ReadSeq)
	k.uvarint(&c.DeletedToSeq)
	k.bool(&c.HasActivatedAt)
	k.varint(&c.ActivatedAtMs)
	k.bool(&c.Tombstone)
}

func (c *DeleteMembership) codeBody(k *coder)   { c.UserChannel.code(k) }
func (c *ActivateMembership) codeBody(k *coder) { c.UserChannel.code(k) }
func (c *ReadMembership) codeBody(k *coder)     { c.UserChannel.code(k); k.uvarint(&c.ReadSeq) }
func (c *HideMembership) codeBody(k *coder)     { c.UserChannel.code(k); k.uvarint(&c.ToSeq) }

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

func (q *GetMembership) codeQuery(c *coder) { c.slot(&q.HashSlot); q.UserChannel.code(c) }

func (q *ListMemberships) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.str(&q.UID, MaxKeyBytes, "uid")
	has := q.After != nil
	c.bool(&has)
	if has {
		if q.After == nil {
			q.After = &ActivityPos{}
		}
		c.varint(&q.After.AtMs)
		c.channelRef(&q.After.ChannelType, &q.After.ChannelID)
	}
	c.limit(&q.Limit, maxQueryLimit, "page limit")
}

func (p *MembershipPage) code(c *coder) { page(c, &p.Items, &p.More) }

func init() {
	registerCommand[PutMembership]()
	registerCommand[DeleteMembership]()
	registerCommand[ReadMembership]()
	registerCommand[HideMembership]()
	registerCommand[ActivateMembership]()
	registerQuery[GetMembership]()
	registerQuery[ListMemberships]()
	registerAnswers[Membership, MembershipPage](answerMembership, answerMembershipPage)
}
