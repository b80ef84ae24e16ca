package controller

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// DrainNode starts draining a node: it takes no new replicas and the
// balancer moves every replica and leader off it. Draining a draining node
// changes nothing.
type DrainNode struct {
	ID slotstore.NodeID `json:"id"`
}

// RemoveNode removes a drained node from the cluster for good: its id is
// never reused, and a node that starts again with that id is refused.
type RemoveNode struct {
	ID slotstore.NodeID `json:"id"`
}

// SetBalancer pauses or resumes the balancer.
type SetBalancer struct {
	Paused bool `json:"paused"`
}

// BalancerIntent is the operator's word on the balancer (replicated, so a
// pause outlives a controller failover).
type BalancerIntent struct {
	Paused      bool  `json:"paused"`
	ChangedAtMs int64 `json:"changed_at_ms,omitempty"`
}

// ReplicasOn counts the groups with a desired peer on node.
func (s *State) ReplicasOn(node slotstore.NodeID) int {
	n := 0
	for _, g := range s.Groups {
		if _, ok := g.Peers[node]; ok {
			n++
		}
	}
	return n
}

// activeNodes counts the active nodes other than except.
func (s *State) activeNodes(except slotstore.NodeID) int {
	n := 0
	for id, node := range s.Nodes {
		if id != except && node.State == NodeActive {
			n++
		}
	}
	return n
}

func applyDrainNode(s *State, d *DrainNode, timeMs int64) Result {
	n, ok := s.Nodes[d.ID]
	if !ok {
		return refuse(slotstore.CodeNotFound, "node %d is not registered", d.ID)
	}
	switch n.State {
	case NodeDraining:
		return Result{OK: true, Message: "already draining"}
	case NodeRemoved:
		return refuse(slotstore.CodeConflict, "node %d was removed", d.ID)
	}
	held := s.ReplicasOn(d.ID)
	if left := s.activeNodes(d.ID); held > 0 && left < s.ReplicationFactor {
		return refuse(slotstore.CodeFailedPrecondition,
			"node %d holds %d replicas and only %d other active nodes would be left for %d replicas per group", d.ID, held, left, s.ReplicationFactor)
	}
	n.State, n.DrainStartedAtMs, n.DrainReplicas = NodeDraining, timeMs, held
	return Result{OK: true, Message: fmt.Sprintf("node %d drains %d replicas", d.ID, held)}
}

func applyRemoveNode(s *State, r *RemoveNode) Result {
	n, ok := s.Nodes[r.ID]
	if !ok {
		return refuse(slotstore.CodeNotFound, "node %d is not registered", r.ID)
	}
	if n.State == NodeRemoved {
		return Result{OK: true, Message: "already removed"}
	}
	if held := s.ReplicasOn(r.ID); held > 0 {
		return refuse(slotstore.CodeFailedPrecondition, "node %d still holds %d replicas; drain it first", r.ID, held)
	}
	for _, id := range s.TaskIDs() {
		if t := s.Tasks[id]; (t.To == r.ID || t.From == r.ID) && (t.Status == TaskRunning || t.Status == TaskCancelling) {
			return refuse(slotstore.CodeFailedPrecondition, "task %d still moves a replica of node %d", t.ID, r.ID)
		}
	}
	if n.State != NodeDraining && s.activeNodes(r.ID) == 0 {
		return refuse(slotstore.CodeFailedPrecondition, "node %d is the last active node", r.ID)
	}
	n.State = NodeRemoved
	return Result{OK: true}
}

func applySetBalancer(s *State, b *SetBalancer, timeMs int64) Result {
	if s.Balancer.Paused != b.Paused {
		s.Balancer = BalancerIntent{Paused: b.Paused, ChangedAtMs: timeMs}
	}
	return Result{OK: true}
}
