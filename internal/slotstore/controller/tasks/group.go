package tasks

import (
	"context"
	"fmt"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
)

// groupStep does one step of a group creation: wait until the new group has
// a leader and every desired peer as a voter; cancelled, retire the group.
func (e *Executor) groupStep(ctx context.Context, t slotstore.Task) error {
	if t.Status == controller.TaskCancelling {
		if err := e.cfg.Node.RetireGroup(ctx, t.Group); err != nil {
			return err
		}
		return e.advance(ctx, t, "", controller.TaskCancelled, "cancelled",
			&slotstore.PhaseRecord{Phase: t.Phase, Note: fmt.Sprintf("group %d retired", t.Group), Voters: []uint64{}, Learners: []uint64{}})
	}
	if t.Phase != controller.PhaseStart {
		return nil
	}
	grp, ok := e.cfg.Node.Controller().Groups[t.Group]
	if !ok {
		return fmt.Errorf("group %d is not in the controller state", t.Group)
	}
	m, err := e.cfg.Node.Membership(ctx, MembershipRequest{Group: t.Group, Op: OpGet})
	if err != nil {
		return err
	}
	for node, rid := range grp.Peers {
		if _, ok := m.Voters[rid]; !ok {
			return fmt.Errorf("replica %d on node %d is not a voter of group %d yet", rid, node, t.Group)
		}
	}
	leader := e.cfg.Node.GroupLeader(t.Group)
	if leader == 0 {
		return fmt.Errorf("group %d has no leader yet", t.Group)
	}
	return e.advance(ctx, t, controller.PhaseDone, "", "",
		m.Record(t.Phase, fmt.Sprintf("group %d runs on nodes %v, leader node %d", t.Group, grp.PeerNodes(), leader)))
}
