package meta

import (
	"fmt"

	"slotmeta/internal/slotstore"
)

// ChannelTaskKind is what a channel migration task moves: the channel's own
// log replicas and leadership (the message layer's), not a slot group's Raft
// replicas (controller.TaskReplicaMove). Each wire name belongs to its own
// resource: "replica_move" here is a kind of /v1/channels/…/migrations.
type ChannelTaskKind uint8

const (
	ChannelReplicaMove    ChannelTaskKind = 1 // move a replica of the channel's log from SourceNode to TargetNode
	ChannelLeaderTransfer ChannelTaskKind = 2 // move the channel's leadership from SourceNode to TargetNode
)

var channelTaskKindNames = map[ChannelTaskKind]string{ChannelReplicaMove: "replica_move", ChannelLeaderTransfer: "leader_transfer"}

func (k ChannelTaskKind) String() string {
	if n, ok := channelTaskKindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind_%d", uint8(k))
}

// Valid reports whether k is a kind this binary knows.
func (k ChannelTaskKind) Valid() bool { _, ok := channelTaskKindNames[k]; return ok }

// ParseChannelTaskKind parses an API name.
func ParseChannelTaskKind(name string) (ChannelTaskKind, bool) {
	for k, n := range channelTaskKindNames {
		if n == name {
			return k, true
		}
	}
	return 0, false
}

// TaskPhase is where a migration task is. The phases created → copying →
// catching_up → switching → done are ordered; a task only moves forward
// (it may skip phases: a leader transfer copies nothing). Aborted is
// reachable from any phase but done.
type TaskPhase uint8

const (
	PhaseCreated    TaskPhase = 1
	PhaseCopying    TaskPhase = 2
	PhaseCatchingUp TaskPhase = 3
	PhaseSwitching  TaskPhase = 4
	PhaseDone       TaskPhase = 5
	PhaseAborted    TaskPhase = 6
)

var taskPhaseNames = map[TaskPhase]string{
	PhaseCreated: "created", PhaseCopying: "copying", PhaseCatchingUp: "catching_up",
	PhaseSwitching: "switching", PhaseDone: "done", PhaseAborted: "aborted",
}

func (p TaskPhase) String() string {
	if n, ok := taskPhaseNames[p]; ok {
		return n
	}
	return fmt.Sprintf("phase_%d", uint8(p))
}

// ParseTaskPhase parses an API name.
func ParseTaskPhase(name string) (TaskPhase, bool) {
	for p, n := range taskPhaseNames {
		if n == name {
			return p, true
		}
	}
	return 0, false
}

// Finished reports whether no step leads out of p (done, aborted).
func (p TaskPhase) Finished() bool { return p == PhaseDone || p == PhaseAborted }

// PhaseStepOK reports whether advance may move a task from phase from to
// phase to: both ordered phases, to after from.
func PhaseStepOK(from, to TaskPhase) bool {
	return from >= PhaseCreated && to <= PhaseDone && from < to
}

// MaxChannelTasksKept bounds the task history of one channel: creating a
// task trims the oldest (always finished) ones beyond it in the same batch.
const MaxChannelTasksKept = 100

// MaxTaskNoteBytes bounds a task's note.
const MaxTaskNoteBytes = 1024

// ChannelTask is a channel migration task. Its route key is the channel
// id; it lives under TableChannelTask with its per-channel id (from 1; the
// channel's SeqWindow record is at id 0). At most one task of a channel is
// active (not finished): it is always the newest.
type ChannelTask struct {
	ChannelType  uint8
	ChannelID    string
	TaskID       uint64
	Kind         ChannelTaskKind
	SourceNode   uint64
	TargetNode   uint64
	Phase        TaskPhase
	Note         string // the last advance's or abort's note (progress, error)
	CreatedAtMs  int64
	UpdatedAtMs  int64
	FinishedAtMs int64 // 0 until done or aborted
	Revision     uint64
}

// EncodeChannelTask encodes t as a stored value.
func EncodeChannelTask(t *ChannelTask) []byte {
	e := encoder{b: make([]byte, 0, 48+len(t.ChannelID)+len(t.Note))}
	e.u8(entityVersion)
	encChannelRef(&e, t.ChannelType, t.ChannelID)
	e.uvarint(t.TaskID)
	e.u8(uint8(t.Kind))
	e.uvarint(t.SourceNode)
	e.uvarint(t.TargetNode)
	e.u8(uint8(t.Phase))
	e.str(t.Note)
	e.varint(t.CreatedAtMs)
	e.varint(t.UpdatedAtMs)
	e.varint(t.FinishedAtMs)
	e.uvarint(t.Revision)
	return e.b
}

// DecodeChannelTask decodes a stored task (appended fields ignored).
func DecodeChannelTask(b []byte) (*ChannelTask, error) {
	d := decoder{b: b}
	if v := d.u8(); v != entityVersion && d.err() == nil {
		d.fail("unknown channel task version %d", v)
	}
	t := &ChannelTask{}
	t.ChannelType, t.ChannelID = decChannelRef(&d)
	t.TaskID = d.uvarint()
	t.Kind = ChannelTaskKind(d.u8())
	t.SourceNode = d.uvarint()
	t.TargetNode = d.uvarint()
	t.Phase = TaskPhase(d.u8())
	t.Note = d.str(MaxStringBytes)
	t.CreatedAtMs = d.varint()
	t.UpdatedAtMs = d.varint()
	t.FinishedAtMs = d.varint()
	t.Revision = d.uvarint()
	if err := d.err(); err != nil {
		return nil, err
	}
	return t, nil
}

// Migration task commands (ops 70–79).
const (
	OpCreateChannelTask  Op = 70
	OpAdvanceChannelTask Op = 71
	OpAbortChannelTask   Op = 72
)

// CreateChannelTask creates a task in phase created with the next id of the
// channel; conflict while the channel has an active task.
type CreateChannelTask struct {
	Header
	ChanRef
	Kind       ChannelTaskKind
	SourceNode uint64
	TargetNode uint64
}

// AdvanceChannelTask moves task TaskID from ExpectedPhase to Phase, a
// compare-and-set: conflict when the task is not in ExpectedPhase.
type AdvanceChannelTask struct {
	Header
	ChanRef
	TaskID        uint64
	ExpectedPhase TaskPhase
	Phase         TaskPhase
	Note          string
}

// AbortChannelTask aborts task TaskID: conflict if it is done; an aborted
// task answers itself unchanged.
type AbortChannelTask struct {
	Header
	ChanRef
	TaskID uint64
	Note   string
}

func (*CreateChannelTask) Op() Op  { return OpCreateChannelTask }
func (*AdvanceChannelTask) Op() Op { return OpAdvanceChannelTask }
func (*AbortChannelTask) Op() Op   { return OpAbortChannelTask }

func (c *CreateChannelTask) RouteKey() string  { return c.ChannelID }
func (c *AdvanceChannelTask) RouteKey() string { return c.ChannelID }
func (c *AbortChannelTask) RouteKey() string   { return c.ChannelID }

func (c *CreateChannelTask) encodeBody(e *encoder) {
	c.encodeRef(e)
	e.u8(uint8(c.Kind))
	e.uvarint(c.SourceNode)
	e.uvarint(c.TargetNode)
}

func (c *CreateChannelTask) decodeBody(d *decoder) {
	c.decodeRef(d)
	c.Kind = ChannelTaskKind(d.u8())
	c.SourceNode = d.uvarint()
	c.TargetNode = d.uvarint()
}

func (c *AdvanceChannelTask) encodeBody(e *encoder) {
	c.encodeRef(e)
	e.uvarint(c.TaskID)
	e.u8(uint8(c.ExpectedPhase))
	e.u8(uint8(c.Phase))
	e.str(c.Note)
}

func (c *AdvanceChannelTask) decodeBody(d *decoder) {
	c.decodeRef(d)
	c.TaskID = d.uvarint()
	c.ExpectedPhase = TaskPhase(d.u8())
	c.Phase = TaskPhase(d.u8())
	c.Note = d.str(MaxStringBytes)
}

func (c *AbortChannelTask) encodeBody(e *encoder) { c.encodeRef(e); e.uvarint(c.TaskID); e.str(c.Note) }
func (c *AbortChannelTask) decodeBody(d *decoder) {
	c.decodeRef(d)
	c.TaskID = d.uvarint()
	c.Note = d.str(MaxStringBytes)
}

// Migration task queries and answers.
const (
	QueryGetChannelTask   QueryKind = 70
	QueryListChannelTasks QueryKind = 71

	answerChannelTask     = 70
	answerChannelTaskPage = 71
)

// GetChannelTask reads one task. Answer: *ChannelTask or nil.
type GetChannelTask struct {
	HashSlot slotstore.HashSlot
	ChanRef
	TaskID uint64
}

// ListChannelTasks lists a channel's tasks newest first, those with ids
// below BeforeID when it is not 0. Answer: *ChannelTaskPage.
type ListChannelTasks struct {
	HashSlot slotstore.HashSlot
	ChanRef
	BeforeID uint64
	Limit    int
}

// ChannelTaskPage is ListChannelTasks' answer.
type ChannelTaskPage struct {
	Items []*ChannelTask
	More  bool
}

func (*GetChannelTask) Kind() QueryKind   { return QueryGetChannelTask }
func (*ListChannelTasks) Kind() QueryKind { return QueryListChannelTasks }

func (q *GetChannelTask) RouteSlot() slotstore.HashSlot   { return q.HashSlot }
func (q *ListChannelTasks) RouteSlot() slotstore.HashSlot { return q.HashSlot }

func (q *GetChannelTask) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	q.encodeRef(e)
	e.uvarint(q.TaskID)
}

func (q *GetChannelTask) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.decodeRef(d)
	q.TaskID = d.uvarint()
}

func (q *ListChannelTasks) encodeQuery(e *encoder) {
	e.u16(uint16(q.HashSlot))
	q.encodeRef(e)
	e.uvarint(q.BeforeID)
	encLimit(e, q.Limit)
}

func (q *ListChannelTasks) decodeQuery(d *decoder) {
	q.HashSlot = slotstore.HashSlot(d.u16())
	q.decodeRef(d)
	q.BeforeID = d.uvarint()
	q.Limit = decLimit(d)
}

func encodeChannelTaskPage(e *encoder, v any) {
	p := v.(*ChannelTaskPage)
	e.uvarint(uint64(len(p.Items)))
	for _, t := range p.Items {
		e.bytes(EncodeChannelTask(t))
	}
	e.bool(p.More)
}

func decodeChannelTaskPage(d *decoder) (any, error) {
	p := &ChannelTaskPage{}
	var err error
	if p.Items, err = decPageItems(d, DecodeChannelTask); err != nil {
		return nil, err
	}
	p.More = d.bool()
	return p, d.err()
}

func init() {
	registerCommand(OpCreateChannelTask, func() Command { return &CreateChannelTask{} })
	registerCommand(OpAdvanceChannelTask, func() Command { return &AdvanceChannelTask{} })
	registerCommand(OpAbortChannelTask, func() Command { return &AbortChannelTask{} })
	registerQuery(QueryGetChannelTask, func() Query { return &GetChannelTask{} })
	registerQuery(QueryListChannelTasks, func() Query { return &ListChannelTasks{} })
	registerAnswer(answerChannelTask, (*ChannelTask)(nil),
		func(e *encoder, v any) { e.bytes(EncodeChannelTask(v.(*ChannelTask))) },
		func(d *decoder) (any, error) { return DecodeChannelTask(d.bytes(MaxEntryBytes)) })
	registerAnswer(answerChannelTaskPage, (*ChannelTaskPage)(nil), encodeChannelTaskPage, decodeChannelTaskPage)
}
