package meta

import "slotmeta/internal/slotstore"

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

func (*FenceSlot) encodeBody(*encoder)    {}
func (*FenceSlot) decodeBody(*decoder)    {}
func (*UnfenceSlot) encodeBody(*encoder)  {}
func (*UnfenceSlot) decodeBody(*decoder)  {}
func (*ReleaseSlot) encodeBody(*encoder)  {}
func (*ReleaseSlot) decodeBody(*decoder)  {}
func (*DropImported) encodeBody(*encoder) {}
func (*DropImported) decodeBody(*decoder) {}

func (c *AcquireSlot) encodeBody(e *encoder) { e.uvarint(c.MinRevision) }
func (c *AcquireSlot) decodeBody(d *decoder) { c.MinRevision = d.uvarint() }

// maxImportRows bounds one ImportRows command.
const maxImportRows = 4096

func (c *ImportRows) encodeBody(e *encoder) { encodeRows(e, c.Rows) }
func (c *ImportRows) decodeBody(d *decoder) { c.Rows = decodeRows(d, maxImportRows) }

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
func (q *ExportSlot) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.bytes(q.After)
	e.uvarint(uint64(max(q.MaxBytes, 0)))
}
func (q *ExportSlot) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.After = d.bytes(MaxKeyBytes + 64)
	n := d.uvarint()
	if n > MaxEntryBytes {
		d.fail("export chunk of %d bytes", n)
	}
	q.MaxBytes = int(n)
}

const answerSlotChunk = 100

func init() {
	registerCommand(OpFenceSlot, func() Command { return &FenceSlot{} })
	registerCommand(OpUnfenceSlot, func() Command { return &UnfenceSlot{} })
	registerCommand(OpImportRows, func() Command { return &ImportRows{} })
	registerCommand(OpAcquireSlot, func() Command { return &AcquireSlot{} })
	registerCommand(OpReleaseSlot, func() Command { return &ReleaseSlot{} })
	registerCommand(OpDropImported, func() Command { return &DropImported{} })
	registerQuery(QueryExportSlot, func() Query { return &ExportSlot{} })
	registerAnswer(answerSlotChunk, (*SlotChunk)(nil), func(e *encoder, v any) {
		c := v.(*SlotChunk)
		encodeRows(e, c.Rows)
		e.bool(c.Done)
		e.uvarint(c.Revision)
	}, func(d *decoder) (any, error) {
		c := &SlotChunk{Rows: decodeRows(d, maxImportRows*4)}
		c.Done = d.bool()
		c.Revision = d.uvarint()
		return c, d.err()
	})
}
