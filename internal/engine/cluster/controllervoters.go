package cluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The controller group's voters (leader.ControllerVoters): the controller
// leader promotes non-voting members while voters are missing, and the
// removal of a voter promotes one in its place first.

// members is the controller group's membership: voters and non-voting
// members, by id.
func (r controllerReplica) members(ctx context.Context) (voters, nonVoting []slotstore.NodeID, err error) {
	m, err := r.membership(ctx)
	if err != nil {
		return nil, nil, err
	}
	for id := range m.Nodes {
		voters = append(voters, slotstore.NodeID(id))
	}
	for id := range m.NonVotings {
		nonVoting = append(nonVoting, slotstore.NodeID(id))
	}
	slices.Sort(voters)
	slices.Sort(nonVoting)
	return voters, nonVoting, nil
}

// promote makes non-voting member id a voter (dragonboat: adding a replica
// that is a non-voting member promotes it, with its progress).
func (r controllerReplica) promote(ctx context.Context, id slotstore.NodeID) error {
	return r.changeMembership(ctx, fmt.Sprintf("promoting node %d", id), true, func(m *dragonboat.Membership) (func(uint64) error, error) {
		if _, voter := m.Nodes[uint64(id)]; voter {
			return nil, nil
		}
		addr, ok := m.NonVotings[uint64(id)]
		if !ok {
			return nil, slotstore.Errorf(slotstore.CodeFailedPrecondition, "node %d is not a member of the controller group", id)
		}
		return func(cc uint64) error {
			err := r.n.nh.SyncRequestAddReplica(ctx, controller.ShardID, uint64(id), addr, cc)
			if err == nil {
				r.n.cfg.Logger.Info("promoted to a controller voter", "node", id)
			}
			return err
		}, nil
	})
}

// standIn promotes an active non-voting member other than leaving, so that
// removing voter leaving keeps leader.ControllerVoters voters; false when
// there is none.
func (r controllerReplica) standIn(ctx context.Context, leaving slotstore.NodeID) (bool, error) {
	_, learners, err := r.members(ctx)
	if err != nil {
		return false, err
	}
	st := r.n.ctrl.Load()
	for _, id := range learners {
		if n, ok := st.Nodes[id]; id != leaving && ok && n.State == controller.NodeActive {
			return true, r.promote(ctx, id)
		}
	}
	return false, nil
}
