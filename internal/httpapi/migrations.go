package httpapi

import (
	"encoding/binary"
	"net/http"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// migrationRoutes serves /v1/channels/{channel_type}/{channel_id}/migrations
// (channel migration tasks).
type migrationRoutes struct{ *api }

// migrationCreate is the body of POST …/migrations.
type migrationCreate struct {
	Kind       string `json:"kind" validate:"required,maxbytes=32"`
	SourceNode uint64 `json:"source_node" validate:"required,min=1"`
	TargetNode uint64 `json:"target_node" validate:"required,min=1"`
}

// migrationAdvance is the body of POST …/migrations/{task_id}/advance.
type migrationAdvance struct {
	ExpectedPhase string `json:"expected_phase" validate:"required,maxbytes=32"`
	Phase         string `json:"phase" validate:"required,maxbytes=32"`
	Note          string `json:"note" validate:"maxbytes=1024"`
}

// migrationAbort is the optional body of POST …/migrations/{task_id}/abort.
type migrationAbort struct {
	Note string `json:"note" validate:"maxbytes=1024"`
}

type migrationJSON struct {
	ChannelType  uint8  `json:"channel_type"`
	ChannelID    string `json:"channel_id"`
	TaskID       uint64 `json:"task_id"`
	Kind         string `json:"kind"`
	SourceNode   uint64 `json:"source_node"`
	TargetNode   uint64 `json:"target_node"`
	Phase        string `json:"phase"`
	Active       bool   `json:"active"`
	Note         string `json:"note"`
	CreatedAtMs  int64  `json:"created_at_ms"`
	UpdatedAtMs  int64  `json:"updated_at_ms"`
	FinishedAtMs int64  `json:"finished_at_ms,omitempty"`
	Revision     uint64 `json:"revision"`
}

func migrationOut(t *meta.ChannelTask) migrationJSON {
	return migrationJSON{
		ChannelType: t.ChannelType, ChannelID: t.ChannelID, TaskID: t.TaskID, Kind: t.Kind.String(),
		SourceNode: t.SourceNode, TargetNode: t.TargetNode, Phase: t.Phase.String(), Active: !t.Phase.Finished(),
		Note: t.Note, CreatedAtMs: t.CreatedAtMs, UpdatedAtMs: t.UpdatedAtMs, FinishedAtMs: t.FinishedAtMs,
		Revision: t.Revision,
	}
}

// migrationKey names a migration: its channel and task id.
type migrationKey struct {
	meta.ChanRef
	taskID uint64
}

// migrationFromPath parses the channel and the task id of a migration's
// path, in that order.
func migrationFromPath(r *http.Request) (migrationKey, error) {
	c, err := chanRefFromPath(r)
	if err != nil {
		return migrationKey{}, err
	}
	taskID, err := taskIDFromPath(r)
	return migrationKey{c, taskID}, err
}

// taskIDFromPath parses {task_id}: a decimal integer of at least 1.
func taskIDFromPath(r *http.Request) (uint64, error) {
	raw, err := pathParam(r, "task_id", func(string) string { return "" })
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || n == 0 || raw[0] == '0' || raw[0] == '+' {
		return 0, invalidField("task_id", "must be a decimal integer of at least 1")
	}
	return n, nil
}

// migrationRow is a channel's migration task: GET
// …/migrations/{task_id}.
var migrationRow = row[migrationKey, meta.ChannelTask, migrationJSON]{
	noun: "task", path: migrationFromPath, key: func(k migrationKey) string { return k.ChannelID },
	decode: meta.DecodeChannelTask, out: migrationOut,
	get: func(k migrationKey) meta.For[*meta.ChannelTask] {
		return &meta.GetChannelTask{HashSlot: slotstore.HashSlotOfString(k.ChannelID), ChanRef: k.ChanRef, TaskID: k.taskID}
	},
	missing: func(k migrationKey) error {
		return notFound("channel %d/%q has no task %d", k.ChannelType, k.ChannelID, k.taskID)
	},
	location: func(t *meta.ChannelTask) string {
		return channelPath(t.ChannelType, t.ChannelID, "/migrations/"+strconv.FormatUint(t.TaskID, 10))
	},
}

// createMigration is POST …/migrations: 201 with the channel's next task id,
// or 409 conflict while another task of the channel is active.
func (a migrationRoutes) createMigration(w http.ResponseWriter, r *http.Request) error {
	c, err := chanRefFromPath(r)
	if err != nil {
		return err
	}
	var req migrationCreate
	return migrationRow.create(a.api, w, r, &req, func() (string, meta.Command, error) {
		kind, ok := meta.ParseChannelTaskKind(req.Kind)
		if !ok {
			return "", nil, invalidField("kind", "must be replica_move or leader_transfer")
		}
		if req.SourceNode == req.TargetNode {
			return "", nil, invalidField("target_node", "must differ from source_node")
		}
		return c.ChannelID, &meta.CreateChannelTask{ChanRef: c, Kind: kind, SourceNode: req.SourceNode, TargetNode: req.TargetNode}, nil
	})
}

// advanceMigration is POST …/{task_id}/advance, a compare-and-set step:
// 200; 409 conflict when the task is not in expected_phase; 400 when phase
// does not come after expected_phase.
func (a migrationRoutes) advanceMigration(w http.ResponseWriter, r *http.Request) error {
	var req migrationAdvance
	return migrationRow.write(a.api, w, r, http.StatusOK, &req, func(k migrationKey) (meta.Command, error) {
		const phases = "created, copying, catching_up, switching, done"
		from, ok := meta.ParseTaskPhase(req.ExpectedPhase)
		if !ok || from == meta.PhaseAborted {
			return nil, invalidField("expected_phase", "must be one of "+phases)
		}
		to, ok := meta.ParseTaskPhase(req.Phase)
		if !ok || to == meta.PhaseAborted {
			return nil, invalidField("phase", "must be one of "+phases+" (abort a task with …/abort)")
		}
		if !meta.PhaseStepOK(from, to) {
			return nil, invalidField("phase", "must come after expected_phase (created → copying → catching_up → switching → done)")
		}
		return &meta.AdvanceChannelTask{ChanRef: k.ChanRef, TaskID: k.taskID, ExpectedPhase: from, Phase: to, Note: req.Note}, nil
	})
}

// abortMigration is POST …/{task_id}/abort with an optional {note}: 200;
// 409 conflict if the task is done; an aborted task answers 200 unchanged.
// A body is read whenever the request announces one (a Content-Length
// other than 0, or chunked).
func (a migrationRoutes) abortMigration(w http.ResponseWriter, r *http.Request) error {
	var req migrationAbort
	announced := func(r *http.Request) bool { return r.ContentLength != 0 }
	return migrationRow.write(a.api, w, r, http.StatusOK, optionalBody{&req, announced}, func(k migrationKey) (meta.Command, error) {
		return &meta.AbortChannelTask{ChanRef: k.ChanRef, TaskID: k.taskID, Note: req.Note}, nil
	})
}

// listMigrations is GET …/migrations: newest task first. The cursor is the
// last task's id.
func (a migrationRoutes) listMigrations(w http.ResponseWriter, r *http.Request) error {
	t, id, lq, before, err := channelSeqList(r, tagMigrations)
	if err != nil {
		return err
	}
	q := &meta.ListChannelTasks{HashSlot: slotstore.HashSlotOfString(id), ChanRef: meta.ChanRef{ChannelType: t, ChannelID: id},
		BeforeID: before, Limit: lq.limit}
	p, err := readPage(a.api, w, r, id, lq, q, noAnswer("ListChannelTasks"))
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, pageOf(p.Items, p.More, migrationOut,
		func(last *meta.ChannelTask) string { return seqCursor(tagMigrations, last.TaskID) }))
	return nil
}

// channelSeqList parses a newest-first listing of a channel's numbered
// rows: the channel of the path, the list query, and the number its cursor
// continues below (0: from the newest).
func channelSeqList(r *http.Request, tag byte) (channelType uint8, channelID string, lq listQuery, before uint64, err error) {
	if channelType, channelID, err = channelFromPath(r); err != nil {
		return
	}
	if lq, err = parseListQuery(r); err != nil {
		return
	}
	before, err = parseSeqCursor(lq.cursor, tag)
	return
}

// seqCursor / parseSeqCursor carry "continue below number n" for the
// newest-first listings of numbered rows (tasks, events).
func seqCursor(tag byte, n uint64) string { return packCursor(tag, binary.AppendUvarint(nil, n)) }

func parseSeqCursor(s string, tag byte) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	pos, err := unpackCursor(s, tag)
	if err != nil {
		return 0, err
	}
	n, w := binary.Uvarint(pos)
	if w <= 0 || w != len(pos) || n < 2 { // below 1 there is nothing to continue with
		return 0, invalidField("cursor", "is not a cursor this listing issued")
	}
	return n, nil
}
