package meta

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
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

func (t *ChannelTask) code(c *coder) {
	c.version(entityVersion, "channel task")
	c.channelRef(&t.ChannelType, &t.ChannelID)
	c.uvarint(&t.TaskID)
	c.u8((*uint8)(&t.Kind))
	c.uvarint(&t.SourceNode)
	c.uvarint(&t.TargetNode)
	c.u8((*uint8)(&t.Phase))
	c.str(&t.Note, MaxStringBytes, "note")
	c.varint(&t.CreatedAtMs)
	c.varint(&t.UpdatedAtMs)
	c.varint(&t.FinishedAtMs)
	c.uvarint(&t.Revision)
}

// EncodeChannelTask encodes t as a stored value.
func EncodeChannelTask(t *ChannelTask) []byte { return encodeEntity(t) }

// DecodeChannelTask decodes a stored task (appended fields ignored).
func DecodeChannelTask(b []byte) (*ChannelTask, error) { return decodeEntity[ChannelTask](b) }

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

func (c *CreateChannelTask) codeBody(k *coder) {
	c.ChanRef.code(k)
	k.u8((*uint8)(&c.Kind))
	k.uvarint(&c.SourceNode)
	k.uvarint(&c.TargetNode)
}

func (c *AdvanceChannelTask) codeBody(k *coder) {
	c.ChanRef.code(k)
	k.uvarint(&c.TaskID)
	k.u8((*uint8)(&c.ExpectedPhase))
	k.u8((*uint8)(&c.Phase))
	k.str(&c.Note, MaxStringBytes, "note")
}

func (c *AbortChannelTask) codeBody(k *coder) {
	c.ChanRef.code(k)
	k.uvarint(&c.TaskID)
	k.str(&c.Note, MaxStringBytes, "note")
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

func (q *GetChannelTask) codeQuery(c *coder) {
	c.slot(&q.HashSlot)
	q.ChanRef.code(c)
	c.uvarint(&q.TaskID)
}

func (q *ListChannelTasks) codeQuery(c *coder) {
	c.channelScan(&q.HashSlot, &q.ChanRef, &q.BeforeID, &q.Limit)
}

func (p *ChannelTaskPage) code(c *coder) { page(c, &p.Items, &p.More) }

func init() {
	registerCommand[CreateChannelTask]()
	registerCommand[AdvanceChannelTask]()
	registerCommand[AbortChannelTask]()
	registerQuery[GetChannelTask]()
	registerQuery[ListChannelTasks]()
	registerAnswers[ChannelTask, ChannelTaskPage](answerChannelTask, answerChannelTaskPage)
}
