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

func (*GetUser) queryKind() QueryKind   { return QueryGetUser }
func (*GetKV) queryKind() QueryKind     { return QueryGetKV }
func (*ScanUsers) queryKind() QueryKind { return QueryScanUsers }

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

func newQuery(k QueryKind) Query {
	switch k {
	case QueryGetUser:
		return &GetUser{}
	case QueryGetKV:
		return &GetKV{}
	case QueryScanUsers:
		return &ScanUsers{}
	}
	return nil
}

// EncodeQuery encodes q: version | kind | body.
func EncodeQuery(q Query) []byte {
	e := encoder{b: make([]byte, 0, 32)}
	e.u8(wireVersion)
	e.u8(uint8(q.queryKind()))
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
	q := newQuery(k)
	if q == nil {
		return nil, fmt.Errorf("%w: unknown query kind %d", ErrMalformed, k)
	}
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

// Answer tags on the wire.
const (
	answerNil      = 0
	answerUser     = 1
	answerKV       = 2
	answerUserPage = 3
)

// maxPageItems bounds a decoded page.
const maxPageItems = 100000

// EncodeAnswer encodes a query's answer (one of the types the queries
// document, or nil).
func EncodeAnswer(v any) ([]byte, error) {
	e := encoder{b: make([]byte, 0, 64)}
	e.u8(wireVersion)
	switch a := v.(type) {
	case nil:
		e.u8(answerNil)
	case *User:
		if a == nil {
			e.u8(answerNil)
			break
		}
		e.u8(answerUser)
		e.bytes(EncodeUser(a))
	case *KV:
		if a == nil {
			e.u8(answerNil)
			break
		}
		e.u8(answerKV)
		e.bytes(EncodeKV(a))
	case *UserPage:
		e.u8(answerUserPage)
		e.uvarint(uint64(len(a.Users)))
		for _, u := range a.Users {
			e.bytes(EncodeUser(u))
		}
		e.bool(a.More)
		e.u16(uint16(a.LastSlot))
		e.str(a.LastUID)
	default:
		return nil, fmt.Errorf("meta: cannot encode answer %T", v)
	}
	return e.b, nil
}

// DecodeAnswer decodes EncodeAnswer's output.
func DecodeAnswer(b []byte) (any, error) {
	d := decoder{b: b}
	if v := d.u8(); d.err() == nil && v != wireVersion {
		return nil, fmt.Errorf("%w: unknown answer version %d", ErrMalformed, v)
	}
	tag := d.u8()
	var out any
	switch {
	case d.err() != nil:
	case tag == answerNil:
	case tag == answerUser:
		u, err := DecodeUser(d.bytes(MaxEntryBytes))
		if err != nil {
			return nil, err
		}
		out = u
	case tag == answerKV:
		kv, err := DecodeKV(d.bytes(MaxEntryBytes))
		if err != nil {
			return nil, err
		}
		out = kv
	case tag == answerUserPage:
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
		out = page
	default:
		return nil, fmt.Errorf("%w: unknown answer tag %d", ErrMalformed, tag)
	}
	if d.err() != nil {
		return nil, d.err()
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after answer", ErrMalformed, len(d.b))
	}
	return out, nil
}
