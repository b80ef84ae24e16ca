package tasks

import (
	"sort"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Membership operations on a group's Raft. They run on a node that holds a
// replica of the group (this one, else the leader or another desired peer
// over peer RPC). Each is idempotent: an operation whose effect is already
// in the membership does nothing, so a task step can always be retried.
type MembershipOp string

// The membership operations.
const (
	OpGet        MembershipOp = "get"
	OpAddLearner MembershipOp = "add_learner"
	OpPromote    MembershipOp = "promote"
	OpRemove     MembershipOp = "remove"
)

// MembershipRequest is one membership operation on group Group.
type MembershipRequest struct {
	Group     slotstore.GroupID `json:"group"`
	Op        MembershipOp      `json:"op"`
	ReplicaID uint64            `json:"replica_id,omitempty"`
	Addr      string            `json:"addr,omitempty"`
}

// Membership is a group's Raft membership as a node read it.
type Membership struct {
	Voters         map[uint64]string `json:"voters"`
	Learners       map[uint64]string `json:"learners"`
	ConfigChangeID uint64            `json:"config_change_id"`
}

// Record is m as the history of a task's phase records it.
func (m Membership) Record(phase slotstore.TaskPhase, note string) *controller.PhaseRecord {
	r := &controller.PhaseRecord{Phase: phase, ConfigChangeID: m.ConfigChangeID, Note: note,
		Voters: []uint64{}, Learners: []uint64{}}
	for id := range m.Voters {
		r.Voters = append(r.Voters, id)
	}
	for id := range m.Learners {
		r.Learners = append(r.Learners, id)
	}
	sort.Slice(r.Voters, func(i, j int) bool { return r.Voters[i] < r.Voters[j] })
	sort.Slice(r.Learners, func(i, j int) bool { return r.Learners[i] < r.Learners[j] })
	return r
}
