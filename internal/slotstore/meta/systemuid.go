package meta

import "slotmeta/internal/slotstore"

// System UIDs: the set of uids the IM system treats as its own (bots,
// notification senders). The whole set lives under one reserved route key,
// SystemUIDsRouteKey, so it is one hash slot and one ordered scan.

// SystemUID is one member of the system-UID set.
type SystemUID struct {
	UID         string
	CreatedAtMs int64
	Revision    uint64 // the group revision that added it
}

// EncodeSystemUID encodes s as a stored value.
func EncodeSystemUID(s *SystemUID) []byte {
	e := encoder{b: make([]byte, 0, 16+len(s.UID))}
	e.u8(entityVersion)
	e.str(s.UID)
	e.varint(s.CreatedAtMs)
	e.uvarint(s.Revision)
	return e.b
}

// DecodeSystemUID decodes a stored system UID.
func DecodeSystemUID(b []byte) (*SystemUID, error) {
	d := decoder{b: b}
	decodeVersion(&d, "system uid")
	s := &SystemUID{UID: d.str(MaxKeyBytes)}
	s.CreatedAtMs = d.varint()
	s.Revision = d.uvarint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return s, nil
}

const (
	OpAddSystemUID    Op = 12
	OpRemoveSystemUID Op = 13
)

// AddSystemUID adds a uid to the set. Adding a member again changes nothing
// and answers the existing row.
type AddSystemUID struct {
	Header
	UID string
}

// RemoveSystemUID removes a uid from the set; not_found when absent.
type RemoveSystemUID struct {
	Header
	UID string
}

func (*AddSystemUID) Op() Op                     { return OpAddSystemUID }
func (*RemoveSystemUID) Op() Op                  { return OpRemoveSystemUID }
func (*AddSystemUID) RouteKey() string           { return SystemUIDsRouteKey }
func (*RemoveSystemUID) RouteKey() string        { return SystemUIDsRouteKey }
func (c *AddSystemUID) encodeBody(e *encoder)    { e.str(c.UID) }
func (c *AddSystemUID) decodeBody(d *decoder)    { c.UID = d.str(MaxKeyBytes) }
func (c *RemoveSystemUID) encodeBody(e *encoder) { e.str(c.UID) }
func (c *RemoveSystemUID) decodeBody(d *decoder) { c.UID = d.str(MaxKeyBytes) }

// QueryScanSystemUIDs lists the system-UID set.
const QueryScanSystemUIDs QueryKind = 12

// ScanSystemUIDs lists system UIDs after AfterUID ("" from the start), in uid
// order. HashSlot is the hash slot of SystemUIDsRouteKey. Answer: *SystemUIDPage.
type ScanSystemUIDs struct {
	HashSlot slotstore.HashSlot
	AfterUID string
	Limit    int
}

// SystemUIDPage is ScanSystemUIDs' answer; More is set when it stopped at Limit.
type SystemUIDPage struct {
	UIDs []*SystemUID
	More bool
}

func (*ScanSystemUIDs) Kind() QueryKind                 { return QueryScanSystemUIDs }
func (q *ScanSystemUIDs) RouteSlot() slotstore.HashSlot { return q.HashSlot }

func (q *ScanSystemUIDs) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.str(q.AfterUID)
	encodeLimit(e, q.Limit)
}

func (q *ScanSystemUIDs) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.AfterUID = d.str(MaxKeyBytes)
	q.Limit = decodeLimit(d)
}

const answerSystemUIDPage = 12

func init() {
	registerCommand(OpAddSystemUID, func() Command { return &AddSystemUID{} })
	registerCommand(OpRemoveSystemUID, func() Command { return &RemoveSystemUID{} })
	registerQuery(QueryScanSystemUIDs, func() Query { return &ScanSystemUIDs{} })
	registerAnswer(answerSystemUIDPage, (*SystemUIDPage)(nil),
		func(e *encoder, v any) {
			p := v.(*SystemUIDPage)
			encodeItems(e, p.UIDs, EncodeSystemUID)
			e.bool(p.More)
		},
		func(d *decoder) (any, error) {
			p := &SystemUIDPage{UIDs: decodeItems(d, DecodeSystemUID)}
			p.More = d.bool()
			return p, d.err()
		})
}
