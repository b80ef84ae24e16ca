package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

// Batch writes (issue 28): the API splits a batch of business-key writes
// by hash slot and proposes one WriteKVs a slot, all at once. A WriteKVs is
// atomic: every condition of its operations is checked first, in order
// (an operation sees the ones before it), and either all are applied, at
// one revision, or — one condition failing — none.

// KVOp is one operation of a WriteKVs: a put of Value, or a delete, under
// Cond.
type KVOp struct {
	Delete bool
	Key    string
	Value  []byte
	Cond   Cond
}

// WriteKVs writes business keys of one hash slot, all or none. Result
// value: KVWriteResults, an item per operation.
type WriteKVs struct {
	Header
	Ops []KVOp
}

// KVWriteResult is one operation's outcome: Code empty when applied (at
// Revision; a delete tells whether the key existed), failed_precondition
// when its condition failed (Revision: the key's, 0 absent), aborted when
// another operation of the command failed (nothing was written).
type KVWriteResult struct {
	Code     slotstore.Code
	Message  string
	Revision uint64
	Existed  bool
}

// KVWriteResults is WriteKVs' result value.
type KVWriteResults struct {
	Items []KVWriteResult
}

const OpWriteKVs Op = 110

func (*WriteKVs) Op() Op { return OpWriteKVs }

// RouteKey is the first operation's key: all share its hash slot.
func (c *WriteKVs) RouteKey() string {
	if len(c.Ops) == 0 {
		return ""
	}
	return c.Ops[0].Key
}

func (c *WriteKVs) codeBody(k *coder) { list(k, &c.Ops, MaxBatchKeys, "batch operations", codeKVOp) }

func codeKVOp(k *coder, op *KVOp) {
	k.bool(&op.Delete)
	k.str(&op.Key, MaxKeyBytes, "key")
	k.bytes(&op.Value, MaxValueBytes, "value")
	op.Cond.code(k)
}

func (r *KVWriteResults) code(c *coder) {
	c.version(entityVersion, "write results")
	list(c, &r.Items, MaxBatchKeys, "write results", func(c *coder, it *KVWriteResult) {
		code := string(it.Code)
		c.str(&code, MaxKeyBytes, "code")
		it.Code = slotstore.Code(code)
		c.str(&it.Message, MaxKeyBytes, "message")
		c.uvarint(&it.Revision)
		c.bool(&it.Existed)
	})
}

// EncodeKVWriteResults encodes WriteKVs' result value.
func EncodeKVWriteResults(r *KVWriteResults) []byte { return encodeEntity(r) }

// DecodeKVWriteResults decodes EncodeKVWriteResults' output.
func DecodeKVWriteResults(b []byte) (*KVWriteResults, error) { return decodeEntity[KVWriteResults](b) }

// SlotWrites is the WriteKVs of many hash slots of one group in one
// command: a batch write's share of the group, so a batch of 100 keys over
// 82 slots costs a command per group, not per slot. Each part is applied
// exactly as it would be if proposed alone — its slot's ownership and
// fence, its own idempotency record (the same record a lone WriteKVs of the
// same operations and key writes or replays), its own revision — and
// answered on its own: a part whose slot left the group answers
// wrong_group, one being handed over slot_migrating, without touching the
// others. The header's slot is the first part's (the route); the command
// has no idempotency key of its own, and its parts take its time. Result
// value: EncodeResults of an item per part.
type SlotWrites struct {
	Header
	Parts []WriteKVs
}

// MaxSlotWritesParts bounds the parts of a SlotWrites (one a hash slot).
const MaxSlotWritesParts = slotstore.HashSlotCount

const OpSlotWrites Op = 111

func (*SlotWrites) Op() Op { return OpSlotWrites }

// RouteKey is the first part's.
func (c *SlotWrites) RouteKey() string {
	if len(c.Parts) == 0 {
		return ""
	}
	return c.Parts[0].RouteKey()
}

// PartSlots lists the hash slots the command writes (heat counts each).
func (c *SlotWrites) PartSlots() []slotstore.HashSlot {
	out := make([]slotstore.HashSlot, len(c.Parts))
	for i := range c.Parts {
		out[i] = c.Parts[i].HashSlot
	}
	return out
}

// Idempotent reports whether c applied again answers from its first
// application instead of applying twice: it carries an idempotency key,
// or — a SlotWrites — every part does (a forward whose outcome is unknown
// may then be sent again).
func Idempotent(c Command) bool {
	if c.Head().IdempotencyKey != "" {
		return true
	}
	sw, ok := c.(*SlotWrites)
	if !ok || len(sw.Parts) == 0 {
		return false
	}
	for i := range sw.Parts {
		if sw.Parts[i].IdempotencyKey == "" {
			return false
		}
	}
	return true
}

func (c *SlotWrites) codeBody(k *coder) {
	ops := 0
	list(k, &c.Parts, MaxSlotWritesParts, "slot parts", func(k *coder, p *WriteKVs) {
		k.slot(&p.HashSlot)
		k.str(&p.IdempotencyKey, MaxIdempotencyKeyBytes, "idempotency key")
		p.codeBody(k)
		if !p.HashSlot.Valid() {
			k.fail("hash slot %d out of range", p.HashSlot)
		}
		if ops += len(p.Ops); ops > MaxBatchKeys {
			k.fail("%d operations in the slot parts (limit %d)", ops, MaxBatchKeys)
		}
	})
}

func init() {
	registerCommand[WriteKVs]()
	registerCommand[SlotWrites]()
}
