package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

// System UIDs: the set of uids the IM system treats as its own (bots,
// notification senders). The whole set lives under one reserved route key,
// SystemUIDsRouteKey, so it is one hash slot and one ordered scan.

// SystemUID is one member of the system-UID set.
type SystemUID struct {
	UID         string
	CreatedAtMs int64
	Revision    uint64 // the group revision that added it
}

func (s *SystemUID) code(c *coder) {
	c.version(entityVersion, "system uid")
	c.str(&s.UID, MaxKeyBytes, "uid")
	c.varint(&s.CreatedAtMs)
	c.uvarint(&s.Revision)
}

// EncodeSystemUID encodes s as a stored value.
func EncodeSystemUID(s *SystemUID) []byte { return encodeEntity(s) }

// DecodeSystemUID decodes a stored system UID.
func DecodeSystemUID(b []byte) (*SystemUID, error) { return decodeEntity[SystemUID](b) }

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

func (*AddSystemUID) Op() Op                 { return OpAddSystemUID }
func (*RemoveSystemUID) Op() Op              { return OpRemoveSystemUID }
func (*AddSystemUID) RouteKey() string       { return SystemUIDsRouteKey }
func (*RemoveSystemUID) RouteKey() string    { return SystemUIDsRouteKey }
func (c *AddSystemUID) codeBody(k *coder)    { k.str(&c.UID, MaxKeyBytes, "uid") }
func (c *RemoveSystemUID) codeBody(k *coder) { k.str(&c.UID, MaxKeyBytes, "uid") }

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

func (q *ScanSystemUIDs) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.str(&q.AfterUID, MaxKeyBytes, "after uid")
	c.pageLimit(&q.Limit)
}

func (p *SystemUIDPage) code(c *coder) { page(c, &p.UIDs, &p.More) }

const answerSystemUIDPage = 12

func init() {
	registerCommand[AddSystemUID]()
	registerCommand[RemoveSystemUID]()
	registerQuery[ScanSystemUIDs]()
	registerPageAnswer[SystemUIDPage](answerSystemUIDPage)
}
