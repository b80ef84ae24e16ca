package meta

import (
	"fmt"

	"slotmeta/internal/slotstore"
)

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
	registerQuery(QueryGetUser, func() Query { return &GetUser{} })
	registerQuery(QueryGetKV, func() Query { return &GetKV{} })
	registerQuery(QueryScanUsers, func() Query { return &ScanUsers{} })
	registerAnswer(answerUser, (*User)(nil),
		func(e *encoder, v any) { e.bytes(EncodeUser(v.(*User))) },
		func(d *decoder) (any, error) { return DecodeUser(d.bytes(MaxEntryBytes)) })
	registerAnswer(answerKV, (*KV)(nil),
		func(e *encoder, v any) { e.bytes(EncodeKV(v.(*KV))) },
		func(d *decoder) (any, error) { return DecodeKV(d.bytes(MaxEntryBytes)) })
	registerAnswer(answerUserPage, (*UserPage)(nil), encodeUserPage, decodeUserPage)
}

func (q *GetUser) encodeQuery(e *encoder) { e.u16(uint16(q.HashSlot)); e.str(q.UID) }
func (q *GetUser) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.UID = d.str(MaxKeyBytes)
}
func (q *GetKV) encodeQuery(e *encoder) { e.u16(uint16(q.HashSlot)); e.str(q.Key) }
func (q *GetKV) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.Key = d.str(MaxKeyBytes)
}
func (q *ScanUsers) encodeQuery(e *encoder) {
	e.u16(uint16(q.FromSlot))
	e.u16(uint16(q.ToSlot))
	e.str(q.AfterUID)
	e.uvarint(uint64(max(q.Limit, 0)))
}
func (q *ScanUsers) decodeQuery(d *decoder) {
	q.FromSlot = slotstore.HashSlot(d.u16())
	q.ToSlot = slotstore.HashSlot(d.u16())
	q.AfterUID = d.str(MaxKeyBytes)
	n := d.uvarint()
	if n > 100000 {
		d.fail("scan limit %d", n)
	}
	q.Limit = int(n)
}

// EncodeQuery encodes q: version | kind | body.
func EncodeQuery(q Query) []byte {
	e := encoder{b: make([]byte, 0, 32)}
	e.u8(wireVersion)
	e.u8(uint8(q.Kind()))
	q.encodeQuery(&e)
	return e.b
}

// DecodeQuery decodes EncodeQuery's output; trailing bytes are an error.
func DecodeQuery(b []byte) (Query, error) {
	d := decoder{b: b}
	if v := d.u8(); d.err() == nil && v != wireVersion {
		return nil, fmt.Errorf("%w: unknown query version %d", ErrMalformed, v)
	}
	k := QueryKind(d.u8())
	if d.err() != nil {
		return nil, d.err()
	}
	f := queries[k]
	if f == nil {
		return nil, fmt.Errorf("%w: unknown query kind %d", ErrMalformed, k)
	}
	q := f()
	q.decodeQuery(&d)
	if d.err() != nil {
		return nil, d.err()
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after query", ErrMalformed, len(d.b))
	}
	if !q.RouteSlot().Valid() {
		return nil, fmt.Errorf("%w: hash slot out of range", ErrMalformed)
	}
	return q, nil
}

// Answer tags on the wire (the registry in registry.go maps types to tags).
const (
	answerNil      = 0
	answerUser     = 1
	answerKV       = 2
	answerUserPage = 3
)

// maxPageItems bounds a decoded page.
const maxPageItems = 100000

func encodeUserPage(e *encoder, v any) {
	a := v.(*UserPage)
	e.uvarint(uint64(len(a.Users)))
	for _, u := range a.Users {
		e.bytes(EncodeUser(u))
	}
	e.bool(a.More)
	e.u16(uint16(a.LastSlot))
	e.str(a.LastUID)
}

func decodeUserPage(d *decoder) (any, error) {
	n := d.uvarint()
	if n > maxPageItems {
		d.fail("page of %d items", n)
	}
	page := &UserPage{Users: make([]*User, 0, min(n, uint64(len(d.b))))}
	for i := uint64(0); i < n && d.err() == nil; i++ {
		u, err := DecodeUser(d.bytes(MaxEntryBytes))
		if err != nil {
			return nil, err
		}
		page.Users = append(page.Users, u)
	}
	page.More = d.bool()
	page.LastSlot = slotstore.HashSlot(d.u16())
	page.LastUID = d.str(MaxKeyBytes)
	return page, d.err()
}
