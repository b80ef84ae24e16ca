package leader

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// ControllerVoters is how many voters the controller group is kept at
// while enough nodes can be: the founding nodes are its first voters, a
// node that joins is a non-voting member, and when voters are missing —
// fewer founding nodes, a voter removed, a controller recovered from one
// survivor (issue 29) — the controller leader promotes active, reachable
// non-voting members, the lowest id first, one per round, when there are
// enough of them to reach ControllerVoters.
const ControllerVoters = 3

// KeepControllerVoters promotes one non-voting member of the controller
// group when it has fewer than ControllerVoters voters (controller leader
// only; Run calls it every round).
func (l *Leader) KeepControllerVoters(ctx context.Context, now time.Time) {
	voters, learners, err := l.cfg.Host.ControllerMembers(ctx)
	if err != nil || len(voters) >= ControllerVoters || len(learners) == 0 {
		return
	}
	st := l.cfg.Host.Controller()
	reachable := map[slotstore.NodeID]bool{}
	for _, h := range l.health(now) {
		reachable[h.Node] = h.Health == slotstore.NodeReachable
	}
	var eligible []slotstore.NodeID
	for _, id := range learners {
		if n, ok := st.Nodes[id]; ok && n.State == controller.NodeActive && reachable[id] {
			eligible = append(eligible, id)
		}
	}
	// Only on the way to ControllerVoters: two voters are no safer than
	// one, and less available (the loss of either stops the controller).
	if len(voters)+len(eligible) < ControllerVoters {
		return
	}
	slices.Sort(eligible)
	id := eligible[0]
	if err := l.cfg.Host.PromoteController(ctx, id); err != nil {
		l.cfg.Logger.Warn("could not promote a controller voter", "node", id, "err", err)
		return
	}
	l.record(slotstore.Decision{Kind: slotstore.DecisionControllerVoter, Reason: "controller_voters", Leader: l.cfg.NodeID,
		Detail: fmt.Sprintf("node %d promoted to a voter of the controller: %d voters, %d wanted", id, len(voters)+1, ControllerVoters)})
}
