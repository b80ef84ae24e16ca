package meta

import "slotmeta/internal/slotstore"

// Live hash-slot moves: the source keeps taking writes while the slot's rows
// are copied, and records which rows each write changed; the target then
// catches up from that change log, and only the last catch-up is fenced.
//
//	source: TrackSlot → (ExportSlot reads, then ExportChanges reads)
//	        → FenceSlot → (ExportChanges until done) → ReleaseSlot (untracks)
//	target: ImportRows…, ImportChanges… → AcquireSlot
//
// The change log lists, for every command applied to a tracked slot, the row
// keys it wrote or deleted, in Raft order (index, then a sequence within the
// entry); ExportChanges answers each listed row with its value now (or that
// it is gone), so replaying a chunk twice, or a row changed again after it
// was read, converges on the source's state: the later change is listed
// later. UntrackSlot (a cancelled move) stops the log and deletes it.
const (
	OpTrackSlot     Op = 106
	OpUntrackSlot   Op = 107
	OpImportChanges Op = 108
)

// TrackSlot starts logging the changes of a slot the source owns.
type TrackSlot struct{ Header }

// UntrackSlot stops logging and deletes the slot's change log.
type UntrackSlot struct{ Header }

// ImportChanges writes and deletes rows of a slot the target does not own
// yet (a catch-up chunk).
type ImportChanges struct {
	Header
	Rows    []Row
	Deleted [][]byte // row keys (after the group|slot prefix) that are gone at the source
}

func (*TrackSlot) Op() Op                { return OpTrackSlot }
func (*UntrackSlot) Op() Op              { return OpUntrackSlot }
func (*ImportChanges) Op() Op            { return OpImportChanges }
func (*TrackSlot) RouteKey() string      { return "" }
func (*UntrackSlot) RouteKey() string    { return "" }
func (*ImportChanges) RouteKey() string  { return "" }
func (*TrackSlot) slotCommand()          {}
func (*UntrackSlot) slotCommand()        {}
func (*ImportChanges) slotCommand()      {}
func (*TrackSlot) encodeBody(*encoder)   {}
func (*TrackSlot) decodeBody(*decoder)   {}
func (*UntrackSlot) encodeBody(*encoder) {}
func (*UntrackSlot) decodeBody(*decoder) {}

func (c *ImportChanges) encodeBody(e *encoder) {
	encodeRows(e, c.Rows)
	e.uvarint(uint64(len(c.Deleted)))
	for _, k := range c.Deleted {
		e.bytes(k)
	}
}

func (c *ImportChanges) decodeBody(d *decoder) {
	c.Rows = decodeRows(d, maxImportRows)
	n := d.uvarint()
	if n > maxImportRows {
		d.fail("%d deletions in one import", n)
		return
	}
	c.Deleted = make([][]byte, 0, min(n, uint64(len(d.b))))
	for i := uint64(0); i < n && d.err() == nil; i++ {
		k := d.bytes(MaxKeyBytes + 64)
		if d.err() == nil && len(k) < 2 {
			d.fail("row key of %d bytes", len(k))
		}
		c.Deleted = append(c.Deleted, k)
	}
}

// QueryExportChanges is ExportChanges' kind.
const QueryExportChanges QueryKind = 101

// ExportChanges reads the change log of a tracked hash slot after the
// cursor (AfterIndex, AfterSeq), up to about MaxBytes of rows, each row with
// its current value. Answer: *ChangeChunk.
type ExportChanges struct {
	HashSlot   slotstore.HashSlot
	AfterIndex uint64
	AfterSeq   uint32
	MaxBytes   int
}

// ChangeChunk is one chunk of a slot's changes: the rows changed (with
// their values now) and those deleted, the cursor after the last log
// record read, Done when the log has nothing after it, and the exporting
// group's revision counter.
type ChangeChunk struct {
	Rows      []Row
	Deleted   [][]byte
	NextIndex uint64
	NextSeq   uint32
	Records   int // log records the chunk covers (a row changed twice is sent once)
	Done      bool
	Revision  uint64
}

func (q *ExportChanges) RouteSlot() slotstore.HashSlot { return q.HashSlot }
func (*ExportChanges) Kind() QueryKind                 { return QueryExportChanges }
func (q *ExportChanges) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	e.uvarint(q.AfterIndex)
	e.uvarint(uint64(q.AfterSeq))
	e.uvarint(uint64(max(q.MaxBytes, 0)))
}
func (q *ExportChanges) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.AfterIndex = d.uvarint()
	seq := d.uvarint()
	if seq > 1<<32-1 {
		d.fail("change sequence %d", seq)
	}
	q.AfterSeq = uint32(seq)
	n := d.uvarint()
	if n > MaxEntryBytes {
		d.fail("export chunk of %d bytes", n)
	}
	q.MaxBytes = int(n)
}

func encodeRows(e *encoder, rows []Row) {
	e.uvarint(uint64(len(rows)))
	for _, r := range rows {
		e.bytes(r.Key)
		e.bytes(r.Value)
	}
}

// decodeRows reads at most limit rows, each key at least 2 bytes.
func decodeRows(d *decoder, limit uint64) []Row {
	n := d.uvarint()
	if n > limit {
		d.fail("%d rows in one message", n)
		return nil
	}
	rows := make([]Row, 0, min(n, uint64(len(d.b))/2))
	for i := uint64(0); i < n && d.err() == nil; i++ {
		k := d.bytes(MaxKeyBytes + 64)
		if d.err() == nil && len(k) < 2 {
			d.fail("row key of %d bytes", len(k))
		}
		rows = append(rows, Row{Key: k, Value: d.bytes(MaxEntryBytes)})
	}
	return rows
}

const answerChangeChunk = 101

func init() {
	registerCommand(OpTrackSlot, func() Command { return &TrackSlot{} })
	registerCommand(OpUntrackSlot, func() Command { return &UntrackSlot{} })
	registerCommand(OpImportChanges, func() Command { return &ImportChanges{} })
	registerQuery(QueryExportChanges, func() Query { return &ExportChanges{} })
	registerAnswer(answerChangeChunk, (*ChangeChunk)(nil), func(e *encoder, v any) {
		c := v.(*ChangeChunk)
		encodeRows(e, c.Rows)
		e.uvarint(uint64(len(c.Deleted)))
		for _, k := range c.Deleted {
			e.bytes(k)
		}
		e.uvarint(c.NextIndex)
		e.uvarint(uint64(c.NextSeq))
		e.uvarint(uint64(c.Records))
		e.bool(c.Done)
		e.uvarint(c.Revision)
	}, func(d *decoder) (any, error) {
		c := &ChangeChunk{Rows: decodeRows(d, maxImportRows*4)}
		n := d.uvarint()
		if n > maxImportRows*4 {
			d.fail("%d deletions in one chunk", n)
		}
		for i := uint64(0); i < n && d.err() == nil; i++ {
			c.Deleted = append(c.Deleted, d.bytes(MaxKeyBytes+64))
		}
		c.NextIndex = d.uvarint()
		c.NextSeq = uint32(d.uvarint())
		c.Records = int(d.uvarint())
		c.Done = d.bool()
		c.Revision = d.uvarint()
		return c, d.err()
	})
}
