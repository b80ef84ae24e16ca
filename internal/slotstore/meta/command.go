package meta

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"slotmeta/internal/slotstore"
)

// Op identifies a command type on the wire. Values are never reused. Each
// resource family owns a range (see registry.go), so families can grow
// without renumbering.
type Op uint8

const (
	OpCreateUser Op = 1
	OpPutUser    Op = 2
	OpDeleteUser Op = 3
	OpPutKV      Op = 4
	OpDeleteKV   Op = 5
	OpNoop       Op = 6
)

// commandVersion is the first byte of every encoded command.
const commandVersion = 1

// Header is what every command carries besides its body.
type Header struct {
	HashSlot       slotstore.HashSlot // the hash slot of the route key; checked against ownership
	TimeMs         int64              // assigned by the proposing leader; the only clock apply sees
	IdempotencyKey string             // optional; replays the first result
}

// Head returns the header itself, so every command type embedding Header
// satisfies Command's Head method.
func (h *Header) Head() *Header { return h }

// Command is one replicated change to one hash slot.
type Command interface {
	Op() Op
	// RouteKey is the key whose hash slot the command touches.
	RouteKey() string
	Head() *Header
	encodeBody(*encoder)
	decodeBody(*decoder)
}

// CreateUser creates a user; conflict if it exists.
type CreateUser struct {
	Header
	User User
}

// PutUser creates or replaces a user, keeping its creation time.
type PutUser struct {
	Header
	User User
}

// DeleteUser deletes a user and everything stored under it.
type DeleteUser struct {
	Header
	UID string
}

// CondKind is the precondition of a business-key write.
type CondKind uint8

const (
	CondNone       CondKind = 0 // unconditional
	CondIfRevision CondKind = 1 // If-Match: "<revision>"
	CondIfAbsent   CondKind = 2 // If-None-Match: *
	CondIfExists   CondKind = 3 // If-Match: *
)

// Cond is a compare-and-set precondition; failure answers failed_precondition.
type Cond struct {
	Kind     CondKind
	Revision uint64
}

// PutKV writes a business key.
type PutKV struct {
	Header
	Key   string
	Value []byte
	Cond  Cond
}

// DeleteKV deletes a business key.
type DeleteKV struct {
	Header
	Key  string
	Cond Cond
}

// Noop changes nothing; it is a barrier that proves a leader can commit.
type Noop struct {
	Header
}

func (*CreateUser) Op() Op { return OpCreateUser }
func (*PutUser) Op() Op    { return OpPutUser }
func (*DeleteUser) Op() Op { return OpDeleteUser }
func (*PutKV) Op() Op      { return OpPutKV }
func (*DeleteKV) Op() Op   { return OpDeleteKV }
func (*Noop) Op() Op       { return OpNoop }

func (c *CreateUser) RouteKey() string { return c.User.UID }
func (c *PutUser) RouteKey() string    { return c.User.UID }
func (c *DeleteUser) RouteKey() string { return c.UID }
func (c *PutKV) RouteKey() string      { return c.Key }
func (c *DeleteKV) RouteKey() string   { return c.Key }
func (c *Noop) RouteKey() string       { return "" }

func encodeUserBody(e *encoder, u *User) {
	e.str(u.UID)
	e.str(u.Name)
	e.str(u.Avatar)
	e.str(u.Extra)
}

func decodeUserBody(d *decoder, u *User) {
	u.UID = d.str(MaxKeyBytes)
	u.Name = d.str(MaxStringBytes)
	u.Avatar = d.str(MaxStringBytes)
	u.Extra = d.str(MaxStringBytes)
}

func (c *CreateUser) encodeBody(e *encoder) { encodeUserBody(e, &c.User) }
func (c *CreateUser) decodeBody(d *decoder) { decodeUserBody(d, &c.User) }
func (c *PutUser) encodeBody(e *encoder)    { encodeUserBody(e, &c.User) }
func (c *PutUser) decodeBody(d *decoder)    { decodeUserBody(d, &c.User) }
func (c *DeleteUser) encodeBody(e *encoder) { e.str(c.UID) }
func (c *DeleteUser) decodeBody(d *decoder) { c.UID = d.str(MaxKeyBytes) }
func (c *Noop) encodeBody(*encoder)         {}
func (c *Noop) decodeBody(*decoder)         {}

func encodeCond(e *encoder, c Cond) { e.u8(uint8(c.Kind)); e.uvarint(c.Revision) }

func decodeCond(d *decoder) Cond {
	c := Cond{Kind: CondKind(d.u8()), Revision: d.uvarint()}
	if c.Kind > CondIfExists {
		d.fail("unknown condition %d", c.Kind)
	}
	return c
}

func (c *PutKV) encodeBody(e *encoder) { e.str(c.Key); e.bytes(c.Value); encodeCond(e, c.Cond) }
func (c *PutKV) decodeBody(d *decoder) {
	c.Key = d.str(MaxKeyBytes)
	c.Value = d.bytes(MaxValueBytes)
	c.Cond = decodeCond(d)
}
func (c *DeleteKV) encodeBody(e *encoder) { e.str(c.Key); encodeCond(e, c.Cond) }
func (c *DeleteKV) decodeBody(d *decoder) { c.Key = d.str(MaxKeyBytes); c.Cond = decodeCond(d) }

func init() {
	registerCommand(OpCreateUser, func() Command { return &CreateUser{} })
	registerCommand(OpPutUser, func() Command { return &PutUser{} })
	registerCommand(OpDeleteUser, func() Command { return &DeleteUser{} })
	registerCommand(OpPutKV, func() Command { return &PutKV{} })
	registerCommand(OpDeleteKV, func() Command { return &DeleteKV{} })
	registerCommand(OpNoop, func() Command { return &Noop{} })
}

// EncodeCommand encodes c: version | op | hash slot | time | idempotency key | body.
func EncodeCommand(c Command) []byte {
	h := c.Head()
	e := encoder{b: make([]byte, 0, 64)}
	e.u8(commandVersion)
	e.u8(uint8(c.Op()))
	e.u16(uint16(h.HashSlot))
	e.varint(h.TimeMs)
	e.str(h.IdempotencyKey)
	c.encodeBody(&e)
	return e.b
}

// timeAt is where an encoded command's time begins: after its version,
// op and hash slot (EncodeCommand).
const timeAt = 1 + 1 + 2

// StampTime returns enc, an encoded command, with its time set to ms — what
// EncodeCommand gives for the command with TimeMs = ms — so that the
// proposing leader stamps the time on the bytes it was sent (or encoded to
// check) instead of encoding the command again. enc is not changed.
func StampTime(enc []byte, ms int64) ([]byte, error) {
	if len(enc) <= timeAt {
		return nil, fmt.Errorf("%w: %d bytes, no time", ErrMalformed, len(enc))
	}
	_, n := binary.Varint(enc[timeAt:])
	if n <= 0 {
		return nil, fmt.Errorf("%w: bad time varint", ErrMalformed)
	}
	out := make([]byte, 0, len(enc)-n+binary.MaxVarintLen64)
	out = append(out, enc[:timeAt]...)
	out = binary.AppendVarint(out, ms)
	return append(out, enc[timeAt+n:]...), nil
}

// DecodeCommand decodes one command. Trailing bytes are an error: a command
// is framed by its entry, so anything left over means corruption.
func DecodeCommand(b []byte) (Command, error) {
	d := decoder{b: b}
	if v := d.u8(); d.err() == nil && v != commandVersion {
		return nil, fmt.Errorf("%w: unknown command version %d", ErrMalformed, v)
	}
	op := Op(d.u8())
	if d.err() != nil {
		return nil, d.err()
	}
	f := commands[op]
	if f == nil {
		return nil, fmt.Errorf("%w: unknown op %d", ErrMalformed, op)
	}
	c := f()
	h := c.Head()
	h.HashSlot = slotstore.HashSlot(d.u16())
	h.TimeMs = d.varint()
	h.IdempotencyKey = d.str(MaxIdempotencyKeyBytes)
	c.decodeBody(&d)
	if d.err() != nil {
		return nil, d.err()
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	if !h.HashSlot.Valid() {
		return nil, fmt.Errorf("%w: hash slot %d out of range", ErrMalformed, h.HashSlot)
	}
	return c, nil
}

// Fingerprint identifies what a command asks for, leaving out the parts a
// retry changes (time) or that name the request (the idempotency key): a
// retry with the same Idempotency-Key must have the same fingerprint.
func Fingerprint(c Command) [16]byte {
	e := encoder{b: make([]byte, 0, 64)}
	e.u8(uint8(c.Op()))
	e.u16(uint16(c.Head().HashSlot))
	c.encodeBody(&e)
	sum := sha256.Sum256(e.b)
	var fp [16]byte
	copy(fp[:], sum[:16])
	return fp
}
