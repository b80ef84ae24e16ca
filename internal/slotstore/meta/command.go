package meta

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
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
	// codeBody walks the fields after the header (coder).
	codeBody(*coder)
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

// codeClient walks the fields of a user a client sets.
func (u *User) codeClient(c *coder) {
	c.str(&u.UID, MaxKeyBytes, "uid")
	c.str(&u.Name, MaxStringBytes, "name")
	c.str(&u.Avatar, MaxStringBytes, "avatar")
	c.str(&u.Extra, MaxStringBytes, "extra")
}

func (c *CreateUser) codeBody(k *coder) { c.User.codeClient(k) }
func (c *PutUser) codeBody(k *coder)    { c.User.codeClient(k) }
func (c *DeleteUser) codeBody(k *coder) { k.str(&c.UID, MaxKeyBytes, "uid") }
func (*Noop) codeBody(*coder)           {}

func (c *Cond) code(k *coder) {
	k.u8((*uint8)(&c.Kind))
	k.uvarint(&c.Revision)
	if c.Kind > CondIfExists {
		k.fail("unknown condition %d", c.Kind)
	}
}

func (c *PutKV) codeBody(k *coder) {
	k.str(&c.Key, MaxKeyBytes, "key")
	k.bytes(&c.Value, MaxValueBytes, "value")
	c.Cond.code(k)
}

func (c *DeleteKV) codeBody(k *coder) { k.str(&c.Key, MaxKeyBytes, "key"); c.Cond.code(k) }

func init() {
	registerCommand[CreateUser]()
	registerCommand[PutUser]()
	registerCommand[DeleteUser]()
	registerCommand[PutKV]()
	registerCommand[DeleteKV]()
	registerCommand[Noop]()
}

// EncodeCommand encodes c: version | op | hash slot | time | idempotency key
// | body. It fails, with an error wrapping ErrLimit that names the field,
// when a field is over a codec limit or is a value DecodeCommand refuses (a
// hash slot out of range, say): every command it encodes decodes.
func EncodeCommand(c Command) ([]byte, error) {
	k := encoding(64)
	k.b = append(k.b, commandVersion, uint8(c.Op()))
	codeCommand(&k, c)
	if k.err != nil {
		return nil, fmt.Errorf("%T: %w", c, k.err)
	}
	return k.b, nil
}

// Header.code walks the header: hash slot, time, idempotency key.
func (h *Header) code(c *coder) {
	c.slot(&h.HashSlot)
	c.varint(&h.TimeMs)
	c.str(&h.IdempotencyKey, MaxIdempotencyKeyBytes, "idempotency key")
}

// codeCommand walks a command after its version and op bytes.
func codeCommand(k *coder, c Command) {
	h := c.Head()
	h.code(k)
	c.codeBody(k)
	if !h.HashSlot.Valid() {
		k.fail("hash slot %d out of range", h.HashSlot)
	}
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
	return decodeRegistered(b, commandVersion, "command", commands, codeCommand)
}

// Fingerprint identifies what a command asks for, leaving out the parts a
// retry changes (time) or that name the request (the idempotency key): a
// retry with the same Idempotency-Key must have the same fingerprint.
func Fingerprint(c Command) [16]byte {
	k := encoding(64)
	k.b = append(k.b, uint8(c.Op()))
	k.slot(&c.Head().HashSlot)
	c.codeBody(&k)
	sum := sha256.Sum256(k.b)
	var fp [16]byte
	copy(fp[:], sum[:16])
	return fp
}
