package tasks

import (
	"context"
	"fmt"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// groupStep does one step of a group creation: wait until the new group has
// a leader and every desired peer as a voter; cancelled, retire the group.
func (e *Executor) groupStep(ctx context.Context, t controller.Task) error {
	if t.Status == controller.TaskCancelling {
		if err := e.cfg.Node.RetireGroup(ctx, t.Group); err != nil {
			return err
		}
		return e.advance(ctx, t, "", controller.TaskCancelled, "cancelled",
			&controller.PhaseRecord{Phase: t.Phase, Note: fmt.Sprintf("group %d retired", t.Group), Voters: []uint64{}, Learners: []uint64{}})
	}
	if t.Phase != controller.PhaseStart {
		return nil
	}
	rec, err := e.running(ctx, t.Group, t.Phase)
	if err != nil {
		return err
	}
	return e.advance(ctx, t, controller.PhaseDone, "", "", rec)
}

// running checks that group g has a leader and every desired peer as a
// voter, and returns the membership it saw as phase's record.
func (e *Executor) running(ctx context.Context, g slotstore.GroupID, phase slotstore.TaskPhase) (*controller.PhaseRecord, error) {
	grp, ok := e.cfg.Node.Controller().Groups[g]
	if !ok {
		return nil, fmt.Errorf("group %d is not in the controller state", g)
	}
	m, err := e.cfg.Node.Membership(ctx, MembershipRequest{Group: g, Op: OpGet})
	if err != nil {
		return nil, err
	}
	for node, rid := range grp.Peers {
		if _, ok := m.Voters[rid]; !ok {
			return nil, fmt.Errorf("replica %d on node %d is not a voter of group %d yet", rid, node, g)
		}
	}
	leader := e.cfg.Node.GroupLeader(g)
	if leader == 0 {
		return nil, fmt.Errorf("group %d has no leader yet", g)
	}
	return m.Record(phase, fmt.Sprintf("group %d runs on nodes %v, leader node %d", g, grp.PeerNodes(), leader)), nil
}
