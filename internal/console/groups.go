package console

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// groupPages serves the groups and one group's detail, with the group's
// actions: leader transfer, preferred leader and replica move here, creating,
// splitting, merging and retiring groups in groupactions.go.
type groupPages struct{ *console }

func (c groupPages) groups(ctx context.Context, canAct bool) GroupsProps {
	p := GroupsProps{Now: c.now(), CanAct: canAct}
	gs, err := c.src.Groups(ctx)
	if err != nil {
		p.Err = errMessage(err)
		// What the node knows without the controller leader.
		p.Node, p.Local = c.ownReplicas(func(g slotstore.GroupID) bool { return g != 0 })
	}
	p.Groups = gs
	return p
}

func (c groupPages) group(ctx context.Context, id slotstore.GroupID, canAct bool) GroupProps {
	p := GroupProps{Now: c.now(), CanAct: canAct, Nodes: c.src.Nodes(), Others: c.otherGroups(id)}
	g, err := c.src.Group(ctx, id)
	if err != nil {
		p.Err = errMessage(err)
		var own []slotstore.LocalReplica
		p.Node, own = c.ownReplicas(func(g slotstore.GroupID) bool { return g == id })
		if len(own) > 0 {
			p.Local = &own[0]
		}
		return p
	}
	p.Group, p.Found = g, true
	// The preflight verdict for every other voter, before any button.
	cands := append([]slotstore.NodeID(nil), g.Voters...)
	if len(cands) == 0 {
		for _, d := range g.DesiredPeers {
			cands = append(cands, d.Node)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i] < cands[j] })
	for _, n := range cands {
		if n == g.Leader {
			continue
		}
		pf, _, err := c.src.LeaderTransfer(ctx, id, n, true)
		cand := Candidate{Node: n, Preflight: pf}
		if err != nil {
			cand.Err = errMessage(err)
		}
		p.Candidates = append(p.Candidates, cand)
	}
	for _, t := range c.src.Tasks() {
		if t.Group == id || t.ToGroup == id {
			p.Tasks = append(p.Tasks, t)
		}
	}
	var mine []slotstore.Decision
	for _, d := range c.src.Decisions() {
		if d.Group == id {
			mine = append(mine, d)
		}
	}
	p.Decisions = foldDecisions(mine)
	p.Decisions = p.Decisions[:min(len(p.Decisions), 50)]
	return p
}

// ownReplicas is this node and its own replicas of the groups keep
// selects, as its Raft state shows them (Summary.Local): what the group
// pages show when no controller leader answers.
func (c groupPages) ownReplicas(keep func(slotstore.GroupID) bool) (slotstore.NodeID, []slotstore.LocalReplica) {
	sum := c.src.Summary()
	var out []slotstore.LocalReplica
	for _, r := range sum.Local {
		if keep(r.Group) {
			out = append(out, r)
		}
	}
	return sum.NodeID, out
}

// otherGroups lists the groups other than id (the targets of a merge).
func (c groupPages) otherGroups(id slotstore.GroupID) []slotstore.GroupID {
	var out []slotstore.GroupID
	seen := map[slotstore.GroupID]bool{}
	for _, g := range c.src.SlotMap() {
		if g != 0 && g != id && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (c groupPages) groupsPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Groups", "groups", GroupsBody(c.groups(r.Context(), c.session(r).CanAct)))
}

func (c groupPages) groupsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, GroupsTable(c.groups(r.Context(), c.session(r).CanAct)))
}

func groupID(r *http.Request) (slotstore.GroupID, bool) {
	v, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
	return slotstore.GroupID(v), err == nil
}

func (c groupPages) groupPage(w http.ResponseWriter, r *http.Request) {
	id, ok := groupID(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	c.full(w, r, fmt.Sprintf("Group %d", id), "groups", GroupBody(c.group(r.Context(), id, c.session(r).CanAct),
		changePages(c).groupChanges(r.Context(), id)))
}

func (c groupPages) groupFragment(w http.ResponseWriter, r *http.Request) {
	id, ok := groupID(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	c.render(w, r, http.StatusOK, GroupLive(c.group(r.Context(), id, c.session(r).CanAct)))
}

// groupAction adapts an action on the group its path names ({id}) to
// console.action; a bad id goes back to the group list.
func groupAction(h func(r *http.Request, id slotstore.GroupID) (string, Flash)) func(http.ResponseWriter, *http.Request) (string, Flash) {
	return func(_ http.ResponseWriter, r *http.Request) (string, Flash) {
		id, ok := groupID(r)
		if !ok {
			return "/console/groups", Flash{Message: "bad group id"}
		}
		return h(r, id)
	}
}

func formNode(r *http.Request, name string) (slotstore.NodeID, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(r.PostForm.Get(name)), 10, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%s: want a node id", name)
	}
	return slotstore.NodeID(v), nil
}

func (c groupPages) transfer(r *http.Request, id slotstore.GroupID) (string, Flash) {
	target, err := formNode(r, "target")
	if err != nil {
		return groupHref(id), Flash{Message: err.Error()}
	}
	if ok, to, f := confirmed(r, "leader transfer"); !ok {
		return to, f
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	pf, res, err := c.src.LeaderTransfer(ctx, id, target, false)
	if err != nil {
		msg := fmt.Sprintf("Leader transfer of group %d to node %d failed: %s", id, target, errMessage(err))
		if len(pf.Blockers) > 0 && slotstore.AsError(err) == nil {
			for _, b := range pf.Blockers {
				msg += "; " + string(b.Reason) + ": " + b.Detail
			}
		}
		return groupHref(id), Flash{Message: msg}
	}
	return groupHref(id), Flash{OK: true, Message: fmt.Sprintf("Group %d: leadership moved from node %d to node %d (term %d) in %d ms.",
		id, res.PreviousLeader, res.Leader, res.Term, res.TookMs)}
}

func (c groupPages) setPreferred(r *http.Request, id slotstore.GroupID) (string, Flash) {
	node, err := formNode(r, "node")
	if err != nil {
		return groupHref(id), Flash{Message: err.Error()}
	}
	if err := c.src.SetPreferredLeader(r.Context(), id, node); err != nil {
		return groupHref(id), Flash{Message: fmt.Sprintf("Setting the preferred leader of group %d failed: %s", id, errMessage(err))}
	}
	return groupHref(id), Flash{OK: true, Message: fmt.Sprintf("Group %d: preferred leader is now node %d (the reconciler moves leadership when it is safe).", id, node)}
}

func (c groupPages) replicaMove(r *http.Request, id slotstore.GroupID) (string, Flash) {
	from, err := formNode(r, "from")
	if err != nil {
		return groupHref(id), Flash{Message: err.Error()}
	}
	to, err := formNode(r, "to")
	if err != nil {
		return groupHref(id), Flash{Message: err.Error()}
	}
	if ok, page, f := confirmed(r, "replica move"); !ok {
		return page, f
	}
	t, err := c.src.CreateReplicaMove(r.Context(), id, from, to)
	if err != nil {
		return groupHref(id), Flash{Message: fmt.Sprintf("Replica move of group %d from node %d to node %d refused: %s", id, from, to, errMessage(err))}
	}
	return groupHref(id), Flash{OK: true, Message: fmt.Sprintf("Task %d started: move group %d's replica from node %d to node %d.", t.ID, id, from, to)}
}
