package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The console's balancer page: its state and plan, the load per node, the
// drains; pause/resume, drain and remove as actions.

// balancerPages serves the balancer page and its actions.
type balancerPages struct{ *console }

// BalancerProps is the balancer page.
type BalancerProps struct {
	Status slotstore.BalancerStatus
	Plan   slotstore.BalancePlan
	Rows   []BalancerRow
	CanAct bool
	Err    string
	Now    time.Time
}

// BalancerRow is one node of the balancer page.
type BalancerRow struct {
	Load  slotstore.NodeLoad
	State slotstore.NodeState
	Drain *slotstore.DrainProgress
}

func (c balancerPages) balancer(ctx context.Context, canAct bool) BalancerProps {
	p := BalancerProps{CanAct: canAct, Now: c.now()}
	st, err := c.src.Balancer(ctx)
	if err != nil {
		p.Err = errMessage(err)
	}
	p.Status = st
	if plan, err := c.src.BalancerPlan(ctx); err == nil {
		p.Plan = plan
	} else if p.Err == "" {
		p.Err = errMessage(err)
	}
	state := map[slotstore.NodeID]slotstore.NodeState{}
	for _, n := range c.src.Nodes() {
		state[n.ID] = n.State
	}
	for _, l := range st.Load {
		row := BalancerRow{Load: l, State: state[l.Node]}
		for i := range st.Drains {
			if st.Drains[i].Node == l.Node {
				row.Drain = &st.Drains[i]
			}
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}

func (c balancerPages) balancerPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Balancer", "balancer", BalancerBody(c.balancer(r.Context(), c.session(r).CanAct)))
}

func (c balancerPages) balancerFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, BalancerLive(c.balancer(r.Context(), c.session(r).CanAct)))
}

func (c balancerPages) setBalancer(w http.ResponseWriter, r *http.Request) (string, Flash) {
	if g := r.PostForm.Get("release"); g != "" {
		id, err := strconv.ParseUint(g, 10, 64)
		if err != nil || id == 0 {
			return "/console/balancer", Flash{Message: "release: want a group id"}
		}
		if err := c.src.SetBalancer(r.Context(), slotstore.BalancerChange{ReleasePins: []slotstore.GroupID{slotstore.GroupID(id)}}); err != nil {
			return "/console/balancer", Flash{Message: "Refused: " + errMessage(err)}
		}
		return "/console/balancer", Flash{OK: true, Message: fmt.Sprintf("Group %d's pin is released: the balancer may move it again.", id)}
	}
	paused, err := strconv.ParseBool(r.PostForm.Get("paused"))
	if err != nil {
		return "/console/balancer", Flash{Message: "paused: want true or false"}
	}
	if err := c.src.SetBalancer(r.Context(), slotstore.BalancerChange{Paused: &paused}); err != nil {
		return "/console/balancer", Flash{Message: "Refused: " + errMessage(err)}
	}
	if paused {
		return "/console/balancer", Flash{OK: true, Message: "The balancer is paused (drains go on)."}
	}
	return "/console/balancer", Flash{OK: true, Message: "The balancer runs again."}
}

func nodeIDParam(r *http.Request) (slotstore.NodeID, bool) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	return slotstore.NodeID(id), err == nil && id > 0
}

func (c balancerPages) drainNode(w http.ResponseWriter, r *http.Request) (string, Flash) {
	id, ok := nodeIDParam(r)
	if !ok {
		return "/console/balancer", Flash{Message: "bad node id"}
	}
	info, err := c.src.DrainNode(r.Context(), id)
	if err != nil {
		return "/console/balancer", Flash{Message: fmt.Sprintf("Draining node %d refused: %s", id, errMessage(err))}
	}
	return "/console/balancer", Flash{OK: true, Message: fmt.Sprintf("Node %d drains its %d replicas.", id, info.DrainReplicas)}
}

func (c balancerPages) removeNode(w http.ResponseWriter, r *http.Request) (string, Flash) {
	id, ok := nodeIDParam(r)
	if !ok {
		return "/console/balancer", Flash{Message: "bad node id"}
	}
	if err := c.src.RemoveNode(r.Context(), id); err != nil {
		return "/console/balancer", Flash{Message: fmt.Sprintf("Removing node %d refused: %s", id, errMessage(err))}
	}
	return "/console/balancer", Flash{OK: true, Message: fmt.Sprintf("Node %d was removed from the cluster.", id)}
}

// ---- formatting ----

func rate(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

func joinWords(ws []string) string { return strings.ReplaceAll(strings.Join(ws, ", "), "_", " ") }

func drainLeft(d *slotstore.DrainProgress) string {
	switch {
	case d.Done:
		return "done"
	case d.EstimatedLeftMs < 0:
		return "time left unknown yet"
	}
	return "about " + (time.Duration(d.EstimatedLeftMs) * time.Millisecond).Round(time.Second).String() + " left"
}
