package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// balancerRoutes serves the balancer and node removal under /v1/cluster.
type balancerRoutes struct{ *api }

// getBalancer is GET /v1/cluster/balancer: whether it runs, its latest
// round and plan, the load per node and every drain's progress.
func (a balancerRoutes) getBalancer(w http.ResponseWriter, r *http.Request) error {
	return a.reply(w, r, http.StatusOK)(a.op.Balancer(r.Context()))
}

type balancerRequest struct {
	Paused      *bool               `json:"paused" validate:"required_without=ReleasePins"`
	ReleasePins []slotstore.GroupID `json:"release_pins" validate:"omitempty,max=256,dive,min=1"`
}

// putBalancer is PUT /v1/cluster/balancer {"paused": bool, "release_pins":
// [group, …]} (either or both).
func (a balancerRoutes) putBalancer(w http.ResponseWriter, r *http.Request) error {
	var req balancerRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	if err := a.op.SetBalancer(r.Context(), slotstore.BalancerChange{Paused: req.Paused, ReleasePins: req.ReleasePins}); err != nil {
		return err
	}
	return a.getBalancer(w, r)
}

// getBalancerPlan is GET /v1/cluster/balancer/plan: what the balancer
// would do now (a dry run; nothing is started).
func (a balancerRoutes) getBalancerPlan(w http.ResponseWriter, r *http.Request) error {
	p, err := a.op.BalancerPlan(r.Context())
	if err != nil {
		return err
	}
	if p.Actions == nil {
		p.Actions = []slotstore.BalanceAction{}
	}
	a.writeJSON(w, r, http.StatusOK, p)
	return nil
}

// nodeParam parses {id}: a node id from 1.
func nodeParam(r *http.Request) (slotstore.NodeID, error) {
	return nodeValue("id", chi.URLParam(r, "id"))
}

// drainNode is POST /v1/cluster/nodes/{id}/drain: 202 with the node; the
// progress is in GET /v1/cluster/balancer (drains).
func (a balancerRoutes) drainNode(w http.ResponseWriter, r *http.Request) error {
	id, err := nodeParam(r)
	if err != nil {
		return err
	}
	return a.reply(w, r, http.StatusAccepted)(a.op.DrainNode(r.Context(), id))
}

// removeNode is DELETE /v1/cluster/nodes/{id}: a drained node leaves the
// cluster for good.
func (a balancerRoutes) removeNode(w http.ResponseWriter, r *http.Request) error {
	id, err := nodeParam(r)
	if err != nil {
		return err
	}
	return done(w, a.op.RemoveNode(r.Context(), id))
}
