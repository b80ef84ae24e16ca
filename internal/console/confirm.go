package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Confirmation of the actions that move a group's leadership or a replica
// (issue 30): the group page's buttons open a page (GET, the action's own
// path) that says what will happen — for a transfer, what its preflight
// says now — with the one form that does it (POST, confirm=yes). A POST
// without the confirmation is refused and sent to that page: a stray
// button press or a replayed form changes nothing.

// ConfirmProps is a confirmation page.
type ConfirmProps struct {
	Title, Explain string
	Action         string // the POST's path
	Fields         []ConfirmField
	Back           string
	Blockers       []slotstore.Blocker
	Blocked        bool
	Err            string
	CanAct         bool
}

// ConfirmField is a hidden field of the confirmed form.
type ConfirmField struct{ Name, Value string }

// confirmed reports whether a POST came from its confirmation page; when
// not, the flash to answer and the page to send it to.
func confirmed(r *http.Request, what string) (bool, string, Flash) {
	if r.PostForm.Get("confirm") == "yes" {
		return true, "", Flash{}
	}
	q := url.Values{}
	for k, v := range r.PostForm {
		if k != "confirm" && len(v) == 1 {
			q.Set(k, v[0])
		}
	}
	return false, r.URL.Path + "?" + q.Encode(), Flash{Message: "Refused: confirm the " + what + " on this page first. Nothing was changed."}
}

// queryNode parses a node id of the query (0: absent or bad).
func queryNode(r *http.Request, name string) slotstore.NodeID {
	v, _ := strconv.ParseUint(r.URL.Query().Get(name), 10, 64)
	return slotstore.NodeID(v)
}

// confirmTransfer is GET /console/groups/{id}/transfer?target=: the
// transfer's preflight now, and its confirmation.
func (c groupPages) confirmTransfer(w http.ResponseWriter, r *http.Request) {
	id, ok := groupID(r)
	target := queryNode(r, "target")
	if !ok || target == 0 {
		c.render(w, r, http.StatusBadRequest, c.refusedPage(r, "Bad request: want a group and a target node."))
		return
	}
	p := ConfirmProps{Title: fmt.Sprintf("Transfer group %d's leadership to node %d?", id, target),
		Explain: "The target must answer the leader, be caught up and undisturbed; the checks run again when you confirm. " +
			"Writes to the group's hash slots pause for the handover (about one round trip). " +
			"The preferred leader is not changed: the reconciler may move leadership back to it.",
		Action: "/console/groups/" + gid(id) + "/transfer", Fields: []ConfirmField{{"target", nid(target)}},
		Back: groupHref(id), CanAct: c.session(r).CanAct}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	pf, _, err := c.src.LeaderTransfer(ctx, id, target, true)
	p.Blockers, p.Blocked = pf.Blockers, !pf.OK
	if err != nil && len(pf.Blockers) == 0 {
		p.Err = errMessage(err)
	}
	c.full(w, r, "Confirm the transfer", "groups", ConfirmBody(p))
}

// confirmMove is GET /console/groups/{id}/moves?from=&to=: what a replica
// move does, and its confirmation.
func (c groupPages) confirmMove(w http.ResponseWriter, r *http.Request) {
	id, ok := groupID(r)
	from, to := queryNode(r, "from"), queryNode(r, "to")
	if !ok || from == 0 || to == 0 {
		c.render(w, r, http.StatusBadRequest, c.refusedPage(r, "Bad request: want a group and the nodes to move from and to."))
		return
	}
	p := ConfirmProps{Title: fmt.Sprintf("Move group %d's replica from node %d to node %d?", id, from, to),
		Explain: fmt.Sprintf("Adds a learner on node %d, waits for it to catch up, promotes it, then removes node %d's replica "+
			"(leadership moves off node %d first). It runs as a task; the group is pinned so the balancer does not move it back "+
			"(release it on the Balancer page).", to, from, from),
		Action: "/console/groups/" + gid(id) + "/moves", Fields: []ConfirmField{{"from", nid(from)}, {"to", nid(to)}},
		Back: groupHref(id), CanAct: c.session(r).CanAct}
	c.full(w, r, "Confirm the replica move", "groups", ConfirmBody(p))
}
