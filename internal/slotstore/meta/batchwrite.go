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

func init() { registerCommand[WriteKVs]() }
