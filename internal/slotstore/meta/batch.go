package meta

import (
	"context"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Batch reads (issue 28): many keys of one group answered by one query,
// so a batch of a thousand keys over a few groups costs a read round per
// group, not per key. The API splits a batch by group under one routing
// snapshot and sends each group one query; the slots move meanwhile only
// by a migration, so the replica checks each key's slot and answers a key
// whose slot it does not own (any more) as BatchWrongGroup, for the caller
// to ask again where the slot went.

// MaxBatchKeys bounds the keys of one batch query (and of one API batch).
const MaxBatchKeys = 1000

// GetRows reads rows of one table — business keys, users, channels or
// channels' runtime meta — whose hash slots the group that owns HashSlot
// owns, under one read. Answer: *RowBatch, an item per key in order.
type GetRows struct {
	HashSlot slotstore.HashSlot // the route slot: one of the keys' slots
	Table    Table              // TableKV, TableUser, TableChannel or TableRuntime
	Keys     []RowRef
}

// RowRef names one row of a GetRows: its route key (the business key, the
// uid, the channel id) and, for channels and runtime meta, the channel's
// type.
type RowRef struct {
	Key         string
	ChannelType uint8
}

// BatchTables are the tables a GetRows reads.
var BatchTables = []Table{TableKV, TableUser, TableChannel, TableRuntime}

// StoreKey is the row's key in group g's hash slot s.
func (r RowRef) StoreKey(g slotstore.GroupID, s slotstore.HashSlot, t Table) []byte {
	if t == TableChannel || t == TableRuntime {
		return ChannelKey(g, s, t, r.ChannelType, r.Key)
	}
	return RowKey(g, s, t, r.Key)
}

func (q *GetRows) RouteSlot() slotstore.HashSlot { return q.HashSlot }

// BatchState is what a batch read found of one key.
type BatchState uint8

const (
	BatchMissing    BatchState = 0 // no such row
	BatchFound      BatchState = 1 // the row: the item's value
	BatchWrongGroup BatchState = 2 // the group answering does not own the key's hash slot
	BatchNotRead    BatchState = 3 // the answer reached MaxBatchAnswerBytes first: ask again
)

// MaxBatchAnswerBytes bounds the rows one batch answer carries: well under
// a peer answer's bound (MaxEntryBytes), so a batch read through another
// node never fails for its size. The keys past it are answered
// BatchNotRead; the first key is always read (a row is at most a value's
// or an entity's bound).
const MaxBatchAnswerBytes = 4 << 20

// RowBatch is GetRows' answer: Items[i] is Keys[i]'s.
type RowBatch struct {
	Items []RowBatchItem
}

// RowBatchItem is one key's: Row is the row as stored (its table's
// Encode…; the caller decodes it with the table's Decode…) when State is
// BatchFound.
type RowBatchItem struct {
	State BatchState
	Row   []byte
}

// RowsReader reads the GetRows of many groups in one call: a node reads
// the parts its replicas hold together (one read round each, side by side,
// then one view of its store) and asks other nodes for the rest.
type RowsReader interface {
	// ReadRows answers qs[i] in out[i], each with its own answer or error
	// (typed, as Read's).
	ReadRows(ctx context.Context, qs []*GetRows, c Consistency) []RowsAnswer
}

// RowsAnswer is one GetRows' answer in a RowsReader's read: the batch, or
// why it could not be read.
type RowsAnswer struct {
	Batch *RowBatch
	Err   error
}

const QueryGetRows QueryKind = 111

const answerRowBatch = 111

func (*GetRows) Kind() QueryKind   { return QueryGetRows }
func (*GetRows) answer() *RowBatch { return nil }
func (q *GetRows) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	t := uint16(q.Table)
	c.u16(&t)
	q.Table = Table(t) // the reader refuses a table not in BatchTables
	list(c, &q.Keys, MaxBatchKeys, "keys", func(c *coder, r *RowRef) {
		c.str(&r.Key, MaxKeyBytes, "key")
		c.u8(&r.ChannelType)
	})
}

func (b *RowBatch) code(c *coder) { list(c, &b.Items, MaxBatchKeys, "batch items", codeRowBatchItem) }

// codeRowBatchItem codes the state, then the row if there is one (the
// reader sets it exactly when the state is BatchFound).
func codeRowBatchItem(c *coder, it *RowBatchItem) {
	c.u8((*uint8)(&it.State))
	if it.State > BatchNotRead {
		c.fail("batch item state %d", it.State)
	}
	c.bytes(&it.Row, MaxBatchAnswerBytes, "row")
}

func init() {
	registerQuery[GetRows]()
	registerPageAnswer[RowBatch](answerRowBatch)
}
