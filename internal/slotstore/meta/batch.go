package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

// Batch reads (issue 28): many keys of one group answered by one query,
// so a batch of a thousand keys over a few groups costs a read round per
// group, not per key. The API splits a batch by group under one routing
// snapshot and sends each group one query; the slots move meanwhile only
// by a migration, so the replica checks each key's slot and answers a key
// whose slot it does not own (any more) as BatchWrongGroup, for the caller
// to ask again where the slot went.

// MaxBatchKeys bounds the keys of one batch query (and of one API batch).
const MaxBatchKeys = 1000

// GetKVs reads business keys whose hash slots the group that owns HashSlot
// owns, under one read. Answer: *KVBatch, an item per key in order.
type GetKVs struct {
	HashSlot slotstore.HashSlot // the route slot: one of the keys' slots
	Keys     []string
}

func (q *GetKVs) RouteSlot() slotstore.HashSlot { return q.HashSlot }

// BatchState is what a batch read found of one key.
type BatchState uint8

const (
	BatchMissing    BatchState = 0 // no such row
	BatchFound      BatchState = 1 // the row: the item's value
	BatchWrongGroup BatchState = 2 // the group answering does not own the key's hash slot
	BatchNotRead    BatchState = 3 // the answer reached MaxBatchAnswerBytes first: ask again
)

// MaxBatchAnswerBytes bounds the values one batch answer carries: well
// under a peer answer's bound (MaxEntryBytes), so a batch read through
// another node never fails for its size. The keys past it are answered
// BatchNotRead; the first key is always read (a value is at most
// MaxValueBytes).
const MaxBatchAnswerBytes = 4 << 20

// KVBatch is GetKVs' answer: Items[i] is Keys[i]'s.
type KVBatch struct {
	Items []KVBatchItem
}

// KVBatchItem is one key's: KV is set when State is BatchFound.
type KVBatchItem struct {
	State BatchState
	KV    *KV
}

const QueryGetKVs QueryKind = 110

const answerKVBatch = 110

func (*GetKVs) Kind() QueryKind  { return QueryGetKVs }
func (*GetKVs) answer() *KVBatch { return nil }
func (q *GetKVs) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	list(c, &q.Keys, MaxBatchKeys, "keys", codeKey)
}

func codeKey(c *coder, k *string) { c.str(k, MaxKeyBytes, "key") }

func (b *KVBatch) code(c *coder) { list(c, &b.Items, MaxBatchKeys, "batch items", codeKVBatchItem) }

// codeKVBatchItem codes the state, then the row if there is one (the
// reader sets it exactly when the state is BatchFound).
func codeKVBatchItem(c *coder, it *KVBatchItem) {
	c.u8((*uint8)(&it.State))
	if it.State > BatchNotRead {
		c.fail("batch item state %d", it.State)
	}
	has := it.KV != nil
	c.bool(&has)
	if has {
		stored(c, &it.KV)
	}
}

func init() {
	registerQuery[GetKVs]()
	registerPageAnswer[KVBatch](answerKVBatch)
}
