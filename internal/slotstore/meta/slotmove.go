package meta

import "github.com/slotmeta/slotmeta/internal/slotstore"

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

func (*TrackSlot) Op() Op               { return OpTrackSlot }
func (*UntrackSlot) Op() Op             { return OpUntrackSlot }
func (*ImportChanges) Op() Op           { return OpImportChanges }
func (*TrackSlot) RouteKey() string     { return "" }
func (*UntrackSlot) RouteKey() string   { return "" }
func (*ImportChanges) RouteKey() string { return "" }
func (*TrackSlot) slotCommand()         {}
func (*UntrackSlot) slotCommand()       {}
func (*ImportChanges) slotCommand()     {}
func (*TrackSlot) codeBody(*coder)      {}
func (*UntrackSlot) codeBody(*coder)    {}

func (c *ImportChanges) codeBody(k *coder) {
	codeRows(k, &c.Rows, maxImportRows)
	list(k, &c.Deleted, maxImportRows, "deletions in one import", codeRowKey)
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
func (q *ExportChanges) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	c.uvarint(&q.AfterIndex)
	c.uvarint32(&q.AfterSeq, "change sequence")
	c.limit(&q.MaxBytes, MaxEntryBytes, "export chunk bytes")
}

func (k *ChangeChunk) code(c *coder) {
	codeRows(c, &k.Rows, maxImportRows*4)
	list(c, &k.Deleted, maxImportRows*4, "deletions in one chunk", codeRowKey)
	c.uvarint(&k.NextIndex)
	c.uvarint32(&k.NextSeq, "change sequence")
	c.count(&k.Records)
	c.bool(&k.Done)
	c.uvarint(&k.Revision)
}

const answerChangeChunk = 101

func init() {
	registerCommand[TrackSlot]()
	registerCommand[UntrackSlot]()
	registerCommand[ImportChanges]()
	registerQuery[ExportChanges]()
	registerPageAnswer[ChangeChunk](answerChangeChunk)
}
