package meta

// QueryKind identifies a query type on the wire. Values are never reused.
type QueryKind uint8

const (
	QueryGetUser   QueryKind = 1
	QueryGetKV     QueryKind = 2
	QueryScanUsers QueryKind = 3
)

const wireVersion = 1

func (*GetUser) Kind() QueryKind   { return QueryGetUser }
func (*GetKV) Kind() QueryKind     { return QueryGetKV }
func (*ScanUsers) Kind() QueryKind { return QueryScanUsers }

func init() {
	registerQuery[GetUser]()
	registerQuery[GetKV]()
	registerQuery[ScanUsers]()
	registerEntityAnswer[User](answerUser)
	registerEntityAnswer[KV](answerKV)
	registerPageAnswer[UserPage](answerUserPage)
}

func (q *GetUser) codeQuery(c *coder) { c.slot(&q.HashSlot); c.str(&q.UID, MaxKeyBytes, "uid") }
func (q *GetKV) codeQuery(c *coder)   { c.slot(&q.HashSlot); c.str(&q.Key, MaxKeyBytes, "key") }

func (q *ScanUsers) codeQuery(c *coder) {
	c.slot(&q.FromSlot)
	c.slot(&q.ToSlot)
	c.str(&q.AfterUID, MaxKeyBytes, "after uid")
	c.limit(&q.Limit, maxQueryLimit, "scan limit")
}

// EncodeQuery encodes q: version | kind | body. It does not fail: a query
// over a codec limit (which only a caller's bug makes) is refused where it
// is decoded, as it always was.
func EncodeQuery(q Query) []byte {
	c := encoding(32)
	c.b = append(c.b, wireVersion, uint8(q.Kind()))
	q.codeQuery(&c)
	return c.b
}

// DecodeQuery decodes EncodeQuery's output; trailing bytes are an error.
func DecodeQuery(b []byte) (Query, error) {
	return decodeRegistered(b, wireVersion, "query", queries, func(c *coder, q Query) {
		q.codeQuery(c)
		if !q.RouteSlot().Valid() {
			c.fail("hash slot %d out of range", q.RouteSlot())
		}
	})
}

// Answer tags on the wire (the registry in registry.go maps types to tags).
const (
	answerNil      = 0
	answerUser     = 1
	answerKV       = 2
	answerUserPage = 3
)

func (p *UserPage) code(c *coder) {
	page(c, &p.Users, &p.More)
	c.slot(&p.LastSlot)
	c.str(&p.LastUID, MaxKeyBytes, "last uid")
}
