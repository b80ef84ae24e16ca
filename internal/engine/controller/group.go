package controller

import (
	"fmt"
	"slices"
	"sort"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Slot groups created and retired at runtime.
//
// Creating a group is a task: the command commits the group's intent at
// once — a new id (never one used before, so that no genesis ownership or
// old data applies to it), desired peers with fresh replica ids, config
// epoch 1, no hash slots — and every peer's replica set starts its replica
// from that intent, bootstrapped with the same initial members. The task's
// one working phase, start, waits until the group has a leader and every
// desired peer in its Raft membership. Cancelling it before it is done
// retires the group again.
//
// Retiring removes an empty group from the intent (refused while it owns a
// hash slot or a task works on it) and remembers its id; every node then
// stops its replica and deletes the group's Raft log and rows, also a node
// that was down at the time, when it comes back.
const (
	TaskGroupCreate slotstore.TaskKind = "group_create"

	PhaseStart slotstore.TaskPhase = "start" // the peers start their replicas: wait for a leader and the whole membership

	// MaxGroups bounds the slot groups of a cluster: a group owns at least
	// one hash slot once in use.
	MaxGroups = slotstore.HashSlotCount
	// maxRetired bounds the retired ids kept for nodes that come back.
	maxRetired = 1024
)

var groupCreatePhases = []slotstore.TaskPhase{PhaseStart, PhaseDone}

// CreateGroup starts a new, empty slot group on Peers (the replication
// factor's count of distinct active nodes) or, without Peers, on the active
// nodes that hold the fewest replicas.
type CreateGroup struct {
	Peers []slotstore.NodeID `json:"peers,omitempty"`
}

// RetireGroup removes an empty group.
type RetireGroup struct {
	Group slotstore.GroupID `json:"group"`
}

func applyCreateGroup(s *State, c *CreateGroup, timeMs int64) Result {
	if !s.Bootstrapped {
		return refuse(slotstore.CodeRouteNotReady, "cluster is not bootstrapped")
	}
	if len(s.Groups) >= MaxGroups {
		return refuse(slotstore.CodeConflict, "the cluster has %d groups, the most it may have", len(s.Groups))
	}
	peers := c.Peers
	if len(peers) == 0 {
		peers = leastLoaded(s, s.ReplicationFactor)
	}
	if err := checkPeers(s, peers); err != nil {
		return refuse(slotstore.CodeInvalidArgument, "%v", err)
	}
	id := s.nextGroupID()
	grp := &Group{ID: id, Peers: map[slotstore.NodeID]uint64{}, ConfigEpoch: 1, PreferredSetAtMs: timeMs}
	for _, n := range peers {
		grp.Peers[n] = s.NextReplicaID
		s.NextReplicaID++
	}
	grp.PreferredLeader = fewestPreferred(s, peers)
	s.Groups[id] = grp
	s.NextGroupID = uint64(id) + 1
	s.NextTaskID++
	t := &Task{ID: s.NextTaskID, Kind: TaskGroupCreate, Group: id, Phase: PhaseStart, Status: TaskRunning,
		Attempt: 1, CreatedAtMs: timeMs, UpdatedAtMs: timeMs}
	if s.Tasks == nil {
		s.Tasks = map[uint64]*Task{}
	}
	s.Tasks[t.ID] = t
	return Result{OK: true, TaskID: t.ID, Message: fmt.Sprintf("group %d created on nodes %v", id, peers)}
}

// nextGroupID is a group id never used: above every group there is or was,
// the genesis groups and the retired ones included.
func (s *State) nextGroupID() slotstore.GroupID {
	next := max(s.NextGroupID, uint64(s.InitialGroupCount)+1)
	for id := range s.Groups {
		next = max(next, uint64(id)+1)
	}
	for _, id := range s.Retired {
		next = max(next, uint64(id)+1)
	}
	return slotstore.GroupID(next)
}

func checkPeers(s *State, peers []slotstore.NodeID) error {
	if len(peers) != s.ReplicationFactor {
		return fmt.Errorf("a group needs %d peers (the replication factor), %d named", s.ReplicationFactor, len(peers))
	}
	seen := map[slotstore.NodeID]bool{}
	for _, n := range peers {
		info, ok := s.Nodes[n]
		if !ok || info.State != NodeActive {
			return fmt.Errorf("node %d is not an active node", n)
		}
		if seen[n] {
			return fmt.Errorf("node %d is named twice", n)
		}
		seen[n] = true
	}
	return nil
}

// leastLoaded is the n active data nodes with the fewest desired replicas
// (ties: the lower node id); fewer if there are not n.
func leastLoaded(s *State, n int) []slotstore.NodeID {
	load := map[slotstore.NodeID]int{}
	for _, g := range s.Groups {
		for node := range g.Peers {
			load[node]++
		}
	}
	var nodes []slotstore.NodeID
	for _, id := range s.NodeIDs() {
		if info := s.Nodes[id]; info.State == NodeActive && slices.Contains(info.Roles, slotstore.RoleData) {
			nodes = append(nodes, id)
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool { return load[nodes[i]] < load[nodes[j]] })
	return nodes[:min(n, len(nodes))]
}

// fewestPreferred is the peer that is the preferred leader of the fewest groups.
func fewestPreferred(s *State, peers []slotstore.NodeID) slotstore.NodeID {
	count := map[slotstore.NodeID]int{}
	for _, g := range s.Groups {
		count[g.PreferredLeader]++
	}
	best := peers[0]
	for _, n := range peers[1:] {
		if count[n] < count[best] || count[n] == count[best] && n < best {
			best = n
		}
	}
	return best
}

func applyRetireGroup(s *State, c *RetireGroup) Result {
	if _, ok := s.Groups[c.Group]; !ok {
		for _, id := range s.Retired {
			if id == c.Group {
				return Result{OK: true, Message: fmt.Sprintf("group %d is retired", c.Group)}
			}
		}
		return refuse(slotstore.CodeNotFound, "group %d does not exist", c.Group)
	}
	for hs, g := range s.HashToGroup {
		if g == c.Group {
			return refuse(slotstore.CodeConflict, "group %d still owns hash slot %d", c.Group, hs)
		}
	}
	if t := activeTask(s, c.Group); t != nil && !createdBy(t, c.Group) {
		return refuse(slotstore.CodeConflict, "task %d is running on group %d", t.ID, c.Group)
	}
	if len(s.Groups) == 1 {
		return refuse(slotstore.CodeConflict, "group %d is the cluster's last group", c.Group)
	}
	delete(s.Groups, c.Group)
	delete(s.HighWater, c.Group)
	retire(s, c.Group)
	return Result{OK: true, Message: fmt.Sprintf("group %d retired", c.Group)}
}

// createdBy reports whether t is the cancelled creation of group g (a group
// creation, or a split that moved no slot into it yet): t retires g.
func createdBy(t *Task, g slotstore.GroupID) bool {
	if t.Status != TaskCancelling {
		return false
	}
	return t.Kind == TaskGroupCreate && t.Group == g || t.Kind == TaskGroupSplit && t.ToGroup == g && t.Moved == 0
}

// retire remembers g as retired (bounded) and never to be used again.
func retire(s *State, g slotstore.GroupID) {
	s.Retired = appendBounded(s.Retired, g, maxRetired)
	s.NextGroupID = max(s.NextGroupID, uint64(g)+1)
}

// IsRetired reports whether g was retired (and its data is to go).
func (s *State) IsRetired(g slotstore.GroupID) bool {
	for _, id := range s.Retired {
		if id == g {
			return true
		}
	}
	return false
}
