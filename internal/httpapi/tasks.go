package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// taskRoutes serves the controller's tasks under /v1/cluster: starting
// replica moves, group creation, splits, merges, retirements and hash-slot
// migrations, and following or cancelling them.
type taskRoutes struct{ *api }

type replicaMoveRequest struct {
	FromNode uint64 `json:"from_node" validate:"required,min=1"`
	ToNode   uint64 `json:"to_node" validate:"required,min=1"` // = from_node: rebuild in place
}

// createReplicaMove is POST /v1/cluster/groups/{id}/replica-moves: it starts
// the task and answers 202 with it; the task then runs on the controller
// leader (GET /v1/cluster/tasks/{id} follows it).
func (a taskRoutes) createReplicaMove(ctx context.Context, g slotstore.GroupID, req *replicaMoveRequest) (slotstore.Task, error) {
	return a.op.CreateReplicaMove(ctx, g, slotstore.NodeID(req.FromNode), slotstore.NodeID(req.ToNode))
}

// startOnGroup serves a POST that starts a task on group {id} as its body
// B asks: start asks the controller; the answer is taskStarted's.
func startOnGroup[B any](a taskRoutes, start func(ctx context.Context, g slotstore.GroupID, req *B) (slotstore.Task, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return a.taskStarted(w, r)(onGroup(a.api, w, r, start))
	}
}

type createGroupRequest struct {
	Peers []uint64 `json:"peers" validate:"max=16,dive,min=1"`
}

// createGroup is POST /v1/cluster/groups: it starts the group_create task
// and answers 202 with it (its group is the new group's id).
func (a taskRoutes) createGroup(w http.ResponseWriter, r *http.Request) error {
	var req createGroupRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	return a.taskStarted(w, r)(a.op.CreateGroup(r.Context(), nodeIDs(req.Peers)))
}

// taskStarted answers a request that started task t: 202 with the task and
// its URL, or the error.
func (a taskRoutes) taskStarted(w http.ResponseWriter, r *http.Request) func(t slotstore.Task, err error) error {
	return func(t slotstore.Task, err error) error {
		if err != nil {
			return err
		}
		w.Header().Set("Location", "/v1/cluster/tasks/"+strconv.FormatUint(t.ID, 10))
		a.writeJSON(w, r, http.StatusAccepted, t)
		return nil
	}
}

type splitRequest struct {
	HashSlots []int    `json:"hash_slots" validate:"max=256,dive,min=0,max=255"`
	Peers     []uint64 `json:"peers" validate:"max=16,dive,min=1"`
}

// splitGroup is POST /v1/cluster/groups/{id}/split: the group_split task.
func (a taskRoutes) splitGroup(ctx context.Context, g slotstore.GroupID, req *splitRequest) (slotstore.Task, error) {
	slots := make([]slotstore.HashSlot, len(req.HashSlots))
	for i, hs := range req.HashSlots {
		slots[i] = slotstore.HashSlot(hs)
	}
	return a.op.CreateSplit(ctx, g, slots, nodeIDs(req.Peers))
}

// nodeIDs is the node ids of a request.
func nodeIDs(ids []uint64) []slotstore.NodeID {
	out := make([]slotstore.NodeID, len(ids))
	for i, id := range ids {
		out[i] = slotstore.NodeID(id)
	}
	return out
}

type mergeRequest struct {
	Into uint32 `json:"into" validate:"required,min=1"`
}

// mergeGroup is POST /v1/cluster/groups/{id}/merge: the group_merge task.
func (a taskRoutes) mergeGroup(ctx context.Context, g slotstore.GroupID, req *mergeRequest) (slotstore.Task, error) {
	return a.op.CreateMerge(ctx, g, slotstore.GroupID(req.Into))
}

// retireGroup is DELETE /v1/cluster/groups/{id}.
func (a taskRoutes) retireGroup(w http.ResponseWriter, r *http.Request) error {
	g, err := groupParam(r)
	if err != nil {
		return err
	}
	return done(w, a.op.RetireGroup(r.Context(), g))
}

// listTasks is GET /v1/cluster/tasks (a bounded list, newest first, whole).
func (a taskRoutes) listTasks(w http.ResponseWriter, r *http.Request) error {
	a.writeJSON(w, r, http.StatusOK, whole(a.op.Tasks()))
	return nil
}

func taskParam(r *http.Request) (uint64, error) {
	id, err := strconv.ParseUint(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id == 0 {
		return 0, invalidField("id", "must be a task id from 1")
	}
	return id, nil
}

// getTask is GET /v1/cluster/tasks/{id}.
func (a taskRoutes) getTask(w http.ResponseWriter, r *http.Request) error {
	id, err := taskParam(r)
	if err != nil {
		return err
	}
	return a.reply(w, r, http.StatusOK)(a.op.Task(id))
}

// cancelTask is POST /v1/cluster/tasks/{id}/cancel.
func (a taskRoutes) cancelTask(w http.ResponseWriter, r *http.Request) error {
	id, err := taskParam(r)
	if err != nil {
		return err
	}
	return a.reply(w, r, http.StatusOK)(a.op.CancelTask(r.Context(), id))
}

type slotMigrationRequest struct {
	ToGroup uint32 `json:"to_group" validate:"required,min=1"`
}

// createSlotMigration is POST /v1/cluster/hash-slots/{slot}/migrations.
func (a taskRoutes) createSlotMigration(w http.ResponseWriter, r *http.Request) error {
	slot, err := strconv.ParseUint(chi.URLParam(r, "slot"), 10, 16)
	if err != nil || slot >= slotstore.HashSlotCount {
		return invalidField("slot", "must be a hash slot 0–255")
	}
	var req slotMigrationRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	return a.taskStarted(w, r)(a.op.CreateSlotMigration(r.Context(), slotstore.HashSlot(slot), slotstore.GroupID(req.ToGroup)))
}
