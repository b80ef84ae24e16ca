package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

// Hash-slot migration commands (cluster-internal, ops 100–127). They name
// their hash slot explicitly (Header.HashSlot) instead of deriving it from a
// route key, and the state machine checks them against the migration rules
// rather than plain ownership:
//
//	source: FenceSlot → (rows exported by ExportSlot reads) → ReleaseSlot
//	target: ImportRows… → AcquireSlot        (DropImported undoes a cancelled import)
const (
	OpFenceSlot    Op = 100
	OpUnfenceSlot  Op = 101
	OpImportRows   Op = 102
	OpAcquireSlot  Op = 103
	OpReleaseSlot  Op = 104
	OpDropImported Op = 105
)

// SlotCommand marks the migration commands: they target Header.HashSlot.
type SlotCommand interface {
	Command
	slotCommand()
}

// FenceSlot makes the source refuse writes to the slot (slot_migrating).
type FenceSlot struct{ Header }

// UnfenceSlot lifts the fence (a cancelled migration).
type UnfenceSlot struct{ Header }

// Row is one stored row of a hash slot: its key after the group|slot
// prefix, and its value.
type Row struct {
	Key   []byte
	Value []byte
}

// ImportRows writes rows of a slot the target group does not own yet.
type ImportRows struct {
	Header
	Rows []Row
}

// AcquireSlot makes the target own the slot; its revision counter moves up
// to at least MinRevision (the source's), so revisions never go back.
type AcquireSlot struct {
	Header
	MinRevision uint64
}

// ReleaseSlot makes the source drop the slot: ownership, fence and rows.
type ReleaseSlot struct{ Header }

// DropImported deletes imported rows of a slot the target does not own.
type DropImported struct{ Header }

func (*FenceSlot) Op() Op    { return OpFenceSlot }
func (*UnfenceSlot) Op() Op  { return OpUnfenceSlot }
func (*ImportRows) Op() Op   { return OpImportRows }
func (*AcquireSlot) Op() Op  { return OpAcquireSlot }
func (*ReleaseSlot) Op() Op  { return OpReleaseSlot }
func (*DropImported) Op() Op { return OpDropImported }

func (*FenceSlot) RouteKey() string    { return "" }
func (*UnfenceSlot) RouteKey() string  { return "" }
func (*ImportRows) RouteKey() string   { return "" }
func (*AcquireSlot) RouteKey() string  { return "" }
func (*ReleaseSlot) RouteKey() string  { return "" }
func (*DropImported) RouteKey() string { return "" }

func (*FenceSlot) slotCommand()    {}
func (*UnfenceSlot) slotCommand()  {}
func (*ImportRows) slotCommand()   {}
func (*AcquireSlot) slotCommand()  {}
func (*ReleaseSlot) slotCommand()  {}
func (*DropImported) slotCommand() {}

func (*FenceSlot) codeBody(*coder)    {}
func (*UnfenceSlot) codeBody(*coder)  {}
func (*ReleaseSlot) codeBody(*coder)  {}
func (*DropImported) codeBody(*coder) {}

func (c *AcquireSlot) codeBody(k *coder) { k.uvarint(&c.MinRevision) }

// maxImportRows bounds one ImportRows or ImportChanges command; a chunk
// answered to an export may hold four times as many.
const maxImportRows = 4096

// maxRowKeyBytes bounds a row key (after the group|slot prefix).
const maxRowKeyBytes = MaxKeyBytes + 64

func (c *ImportRows) codeBody(k *coder) { codeRows(k, &c.Rows, maxImportRows) }

// codeRows codes at most limit rows.
func codeRows(c *coder, rows *[]Row, limit int) {
	list(c, rows, limit, "rows in one message", walk[Row])
}

func (r *Row) code(c *coder) {
	codeRowKey(c, &r.Key)
	c.bytes(&r.Value, MaxEntryBytes, "row value")
}

// codeRowKey codes a row key, at least 2 bytes: a table, then a key.
func codeRowKey(c *coder, k *[]byte) {
	c.bytes(k, maxRowKeyBytes, "row key")
	if len(*k) < 2 {
		c.fail("row key of %d bytes", len(*k))
	}
}

// QueryExportSlot is ExportSlot's kind.
const QueryExportSlot QueryKind = 100

// ExportSlot reads the rows of a hash slot from its owning group, in key
// order, after After, up to about MaxBytes. Answer: *SlotChunk.
type ExportSlot struct {
	HashSlot slotstore.HashSlot
	After    []byte
	MaxBytes int
}

// SlotChunk is one chunk of a slot's rows. Done says there are no more;
// Revision is the exporting group's revision counter.
type SlotChunk struct {
	Rows     []Row
	Done     bool
	Revision uint64
}

func (q *ExportSlot) RouteSlot() slotstore.HashSlot { return q.HashSlot }
func (*ExportSlot) Kind() QueryKind                 { return QueryExportSlot }
func (q *ExportSlot) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.bytes(&q.After, maxRowKeyBytes, "after")
	c.limit(&q.MaxBytes, MaxEntryBytes, "export chunk bytes")
}

func (k *SlotChunk) code(c *coder) {
	codeRows(c, &k.Rows, maxImportRows*4)
	c.bool(&k.Done)
	c.uvarint(&k.Revision)
}

const answerSlotChunk = 100

func init() {
	registerCommand[FenceSlot]()
	registerCommand[UnfenceSlot]()
	registerCommand[ImportRows]()
	registerCommand[AcquireSlot]()
	registerCommand[ReleaseSlot]()
	registerCommand[DropImported]()
	registerQuery[ExportSlot]()
	registerPageAnswer[SlotChunk](answerSlotChunk)
}
