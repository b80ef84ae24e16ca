package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// groupRoutes serves the groups under /v1/cluster: their views, leader
// transfers, preferred leaders and the decision log.
type groupRoutes struct{ *api }

// listGroups is GET /v1/cluster/groups: intent and observed fact of every
// group (a short list, returned whole).
func (a groupRoutes) listGroups(w http.ResponseWriter, r *http.Request) error {
	views, err := a.op.Groups(r.Context())
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, whole(views))
	return nil
}

// groupParam parses {id}: a group id from 1.
func groupParam(r *http.Request) (slotstore.GroupID, error) {
	id, err := strconv.ParseUint(chi.URLParam(r, "id"), 10, 32)
	if err != nil || id == 0 {
		return 0, invalidField("id", "must be a group id from 1")
	}
	return slotstore.GroupID(id), nil
}

// nodeValue parses a node id from a query parameter or body field.
func nodeValue(field, v string) (slotstore.NodeID, error) {
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil || id == 0 {
		return 0, invalidField(field, "must be a node id from 1")
	}
	return slotstore.NodeID(id), nil
}

// getGroup is GET /v1/cluster/groups/{id}.
func (a groupRoutes) getGroup(w http.ResponseWriter, r *http.Request) error {
	g, err := groupParam(r)
	if err != nil {
		return err
	}
	return a.reply(w, r, http.StatusOK)(a.op.Group(r.Context(), g))
}

// checkGroup is POST /v1/cluster/groups/{id}/check: a state check now,
// answered with what it found (verdict, differing hash slots, minority).
func (a groupRoutes) checkGroup(w http.ResponseWriter, r *http.Request) error {
	g, err := groupParam(r)
	if err != nil {
		return err
	}
	return a.reply(w, r, http.StatusOK)(a.op.Recovery().CheckGroup(r.Context(), g))
}

// onGroup serves the start of a request that changes group {id} as its
// body B asks: it parses the group, then the body, and calls change.
func onGroup[B, T any](a *api, w http.ResponseWriter, r *http.Request, change func(ctx context.Context, g slotstore.GroupID, req *B) (T, error)) (T, error) {
	var req B
	g, err := groupParam(r)
	if err == nil {
		err = a.decode(w, r, &req)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return change(r.Context(), g, &req)
}

// changeGroup serves a request that changes group {id} as its body asks:
// 200 with what change returns.
func changeGroup[B, T any](a *api, change func(ctx context.Context, g slotstore.GroupID, req *B) (T, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return a.reply(w, r, http.StatusOK)(onGroup(a, w, r, change))
	}
}

type transferRequest struct {
	TargetNode uint64 `json:"target_node" validate:"required,min=1"`
}

// transferLeader is POST /v1/cluster/groups/{id}/leader-transfer.
func (a groupRoutes) transferLeader(ctx context.Context, g slotstore.GroupID, req *transferRequest) (slotstore.TransferResult, error) {
	_, res, err := a.op.LeaderTransfer(ctx, g, slotstore.NodeID(req.TargetNode), false)
	return res, err
}

// preflightTransfer is GET …/leader-transfer/preflight?target_node=: the
// same checks, nothing done; the verdict is in the body (ok, blockers).
func (a groupRoutes) preflightTransfer(w http.ResponseWriter, r *http.Request) error {
	g, err := groupParam(r)
	if err != nil {
		return err
	}
	target, err := nodeValue("target_node", r.URL.Query().Get("target_node"))
	if err != nil {
		return err
	}
	pf, _, err := a.op.LeaderTransfer(r.Context(), g, target, true)
	if err != nil {
		return err
	}
	a.writeJSON(w, r, http.StatusOK, pf)
	return nil
}

type preferredRequest struct {
	Node uint64 `json:"node" validate:"required,min=1"`
}

// setPreferredLeader is PUT /v1/cluster/groups/{id}/preferred-leader.
func (a groupRoutes) setPreferredLeader(ctx context.Context, g slotstore.GroupID, req *preferredRequest) (slotstore.GroupView, error) {
	if err := a.op.SetPreferredLeader(ctx, g, slotstore.NodeID(req.Node)); err != nil {
		return slotstore.GroupView{}, err
	}
	// The view comes from the controller leader, which may apply the new
	// intent a moment after this node did: answer once it shows it.
	for {
		v, err := a.op.Group(ctx, g)
		if err != nil {
			return slotstore.GroupView{}, err
		}
		if v.PreferredLeader == slotstore.NodeID(req.Node) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return slotstore.GroupView{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// listDecisions is GET /v1/cluster/decisions?limit=&cursor=: the bounded
// decision log, newest first, paged by sequence number (seqpage.go).
// maxDecisionsPage is the most decisions one answer holds: the log's own
// bound.
const maxDecisionsPage = 500

func (a groupRoutes) listDecisions(w http.ResponseWriter, r *http.Request) error {
	limit := maxDecisionsPage // absent: every decision kept
	if s, ok, err := single(r.URL.Query(), "limit"); err != nil {
		return err
	} else if ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxDecisionsPage {
			return invalidField("limit", fmt.Sprintf("must be an integer from 1 to %d", maxDecisionsPage))
		}
		limit = n
	}
	cur, _, err := single(r.URL.Query(), "cursor")
	if err != nil {
		return err
	}
	before, err := parseSeqCursor(cur, tagDecisions)
	if err != nil {
		return err
	}
	out, next := newestFirst(a.op.Decisions(), func(d slotstore.Decision) uint64 { return d.Seq }, before, limit)
	page := whole(out)
	if next != 0 {
		page.NextCursor = seqCursor(tagDecisions, next)
	}
	a.writeJSON(w, r, http.StatusOK, page)
	return nil
}

type recoverRequest struct {
	AcceptDataLoss bool `json:"accept_data_loss"`
}

// recoverGroup is POST /v1/cluster/groups/{id}/recover: the lost-quorum
// recovery of issue 29 (admin, audited), refused unless the body accepts
// the data loss; the answer is the report of what may have been lost.
func (a groupRoutes) recoverGroup(ctx context.Context, g slotstore.GroupID, req *recoverRequest) (slotstore.RecoveryReport, error) {
	return a.op.Recovery().RecoverGroup(ctx, g, req.AcceptDataLoss)
}

// listRecoveries is GET /v1/cluster/recoveries: the reports of the
// recoveries made through this node, newest first (admin: they name keys).
func (a groupRoutes) listRecoveries(w http.ResponseWriter, r *http.Request) error {
	a.writeJSON(w, r, http.StatusOK, whole(a.op.Recovery().Recoveries()))
	return nil
}
