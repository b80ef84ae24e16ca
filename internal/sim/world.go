package sim

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

// world is the simulated data plane: nodes that are up or down, each
// group's Raft membership, leader and log, the replicas the nodes run, the
// slots' ownership as the groups' state machines hold it, and the load.
// Its rules are a model, not dragonboat: an election takes ElectionTimeout
// once a group's leader is gone and a quorum of its voters is up; a learner
// catches up after its group's bytes at SnapshotRate; a node runs the
// replicas the controller state places on it (controller.State.Wants), as
// package replicas does.
//
// The controller leader's goroutines (ObserveOnce asks the nodes
// concurrently) reach it through host.go: every method takes mu.
type world struct {
	mu     sync.Mutex
	now    time.Time
	rng    *rand.Rand
	params Params
	nodes  map[slotstore.NodeID]*simNode
	groups map[slotstore.GroupID]*simGroup
	// ctrlVoters are the controller group's voters (the founding nodes,
	// then the promoted ones); ctrlLeader its leader (0: none).
	ctrlVoters []slotstore.NodeID
	ctrlLeader slotstore.NodeID
	// slotBytes is every hash slot's data; slotRate its load (ops/s).
	slotBytes [slotstore.HashSlotCount]int64
	slotRate  [slotstore.HashSlotCount]float64
	// owner is the group whose state machine owns each hash slot;
	// groupBytes each group's data (from owner, every follow).
	owner      [slotstore.HashSlotCount]slotstore.GroupID
	groupBytes map[slotstore.GroupID]int64
	// exported counts each slot's chunks exported this step (slotRead).
	exported map[slotstore.HashSlot]int
}

type simNode struct {
	id        slotstore.NodeID
	up        bool
	downSince time.Time
	replicas  map[slotstore.GroupID]*simReplica
	// reads and writes are the operations the node's API served per hash
	// slot since it started (what a real node reports, package heat).
	reads, writes []uint64
	carry         [slotstore.HashSlotCount]float64 // fractions of an operation not yet counted
}

type simReplica struct {
	id      uint64
	addedAt time.Time // when the node started it (a learner catches up from then)
}

type simGroup struct {
	id       slotstore.GroupID
	voters   map[uint64]slotstore.NodeID
	learners map[uint64]slotstore.NodeID
	ccid     uint64
	leader   uint64 // replica id (0: none)
	term     uint64
	index    uint64 // the leader's log and applied index
	// lostAt is when the group lost its leader (an election ends
	// ElectionTimeout after it, if a quorum of voters is up).
	lostAt time.Time
	fenced map[slotstore.HashSlot]bool
}

func newWorld(p Params, seed int64, start time.Time) *world {
	return &world{now: start, rng: rand.New(rand.NewSource(seed)), params: p,
		nodes: map[slotstore.NodeID]*simNode{}, groups: map[slotstore.GroupID]*simGroup{}}
}

func (w *world) addNode(id slotstore.NodeID) *simNode {
	n := &simNode{id: id, up: true, replicas: map[slotstore.GroupID]*simReplica{},
		reads: make([]uint64, slotstore.HashSlotCount), writes: make([]uint64, slotstore.HashSlotCount)}
	w.nodes[id] = n
	return n
}

// nodeOf is the node of g's replica r (0: none).
func (g *simGroup) nodeOf(r uint64) slotstore.NodeID {
	if n, ok := g.voters[r]; ok {
		return n
	}
	return g.learners[r]
}

// leaderNode is the node leading g (0: none, or its node is down).
func (w *world) leaderNode(g *simGroup) slotstore.NodeID {
	if g == nil || g.leader == 0 {
		return 0
	}
	id := g.nodeOf(g.leader)
	if n := w.nodes[id]; n == nil || !n.up {
		return 0
	}
	return id
}

// upVoters counts g's voters on nodes that are up and run the replica.
func (w *world) upVoters(g *simGroup) []uint64 {
	var out []uint64
	for r, id := range g.voters {
		if n := w.nodes[id]; n != nil && n.up && n.replicas[g.id] != nil && n.replicas[g.id].id == r {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// follow starts and stops every up node's replicas as the controller state
// places them (controller.State.Wants), and founds the Raft membership of
// a group the state has and the world not yet (its desired peers).
func (w *world) follow(st *controller.State) {
	for _, gid := range st.GroupIDs() {
		if _, ok := w.groups[gid]; ok {
			continue
		}
		g := &simGroup{id: gid, voters: map[uint64]slotstore.NodeID{}, learners: map[uint64]slotstore.NodeID{},
			ccid: 1, lostAt: w.now, fenced: map[slotstore.HashSlot]bool{}}
		for node, r := range st.Groups[gid].Peers {
			g.voters[r] = node
		}
		w.groups[gid] = g
	}
	for gid := range w.groups {
		if _, ok := st.Groups[gid]; !ok {
			delete(w.groups, gid) // retired
		}
	}
	// The nodes that may want a replica of a group: its desired peers and
	// the targets of its replica moves (what Wants looks at), asked only
	// for these — a thousand nodes would otherwise ask for every group.
	candidates := map[slotstore.GroupID][]slotstore.NodeID{}
	for gid, grp := range st.Groups {
		for node := range grp.Peers {
			candidates[gid] = append(candidates[gid], node)
		}
	}
	for _, t := range st.Tasks {
		if t.Kind == controller.TaskReplicaMove {
			candidates[t.Group] = append(candidates[t.Group], t.To)
		}
	}
	for _, n := range w.nodes {
		if !n.up {
			continue
		}
		for gid := range n.replicas {
			if want, _, _ := st.Wants(n.id, gid); !want {
				delete(n.replicas, gid)
			}
		}
	}
	for gid, nodes := range candidates {
		for _, id := range nodes {
			n := w.nodes[id]
			if n == nil || !n.up {
				continue
			}
			if want, r, _ := st.Wants(id, gid); want {
				if cur := n.replicas[gid]; cur == nil || cur.id != r {
					n.replicas[gid] = &simReplica{id: r, addedAt: w.now}
				}
			}
		}
	}
	w.exported = map[slotstore.HashSlot]int{}
	w.groupBytes = map[slotstore.GroupID]int64{}
	for hs, owner := range w.owner {
		w.groupBytes[owner] += w.slotBytes[hs]
	}
}

// elect gives every group without a live leader one, ElectionTimeout after
// it lost it, when a quorum of its voters is up (the lowest term wins no
// race here: one of the up voters, drawn).
func (w *world) elect() {
	for _, gid := range slices.Sorted(maps.Keys(w.groups)) {
		g := w.groups[gid]
		if w.leaderNode(g) != 0 {
			if _, voter := g.voters[g.leader]; voter {
				continue
			}
		}
		if g.leader != 0 || g.lostAt.IsZero() {
			g.leader, g.lostAt = 0, w.now
		}
		up := w.upVoters(g)
		if len(up) <= len(g.voters)/2 || w.now.Sub(g.lostAt) < w.params.ElectionTimeout {
			continue
		}
		g.leader, g.term, g.lostAt = up[w.rng.Intn(len(up))], g.term+1, time.Time{}
	}
}

// caughtUp reports whether node's replica r of g holds the group's log:
// a voter or learner that has been running long enough to receive the
// group's data at SnapshotRate.
func (w *world) caughtUp(g *simGroup, rep *simReplica) bool {
	need := time.Duration(float64(w.groupBytes[g.id]) / float64(w.params.SnapshotRate) * float64(time.Second))
	return w.now.Sub(rep.addedAt) >= need
}

// load adds a step of every slot's load to its group's log and to the
// counters of the node leading it (the node whose API served it, as far as
// the model goes).
func (w *world) load(step time.Duration) {
	for hs := range w.slotRate {
		g := w.groups[w.owner[hs]]
		id := w.leaderNode(g)
		if id == 0 || w.slotRate[hs] == 0 {
			continue
		}
		n := w.nodes[id]
		ops := w.slotRate[hs]*step.Seconds() + n.carry[hs]
		whole := uint64(ops)
		n.carry[hs] = ops - float64(whole)
		writes := whole / 2
		n.reads[hs] += whole - writes
		n.writes[hs] += writes
		g.index += writes
	}
}

// status is node id's report, as a real node's LocalStatus builds it.
func (w *world) status(id slotstore.NodeID) slotstore.NodeStatus {
	n := w.nodes[id]
	st := slotstore.NodeStatus{Node: id, AtMs: w.now.UnixMilli(), Replicas: []slotstore.ReplicaStatus{},
		SlotReads: slices.Clone(n.reads), SlotWrites: slices.Clone(n.writes), Version: clusterversion.Binary}
	for _, gid := range slices.Sorted(maps.Keys(n.replicas)) {
		rep, g := n.replicas[gid], w.groups[gid]
		if g == nil {
			continue
		}
		rs := slotstore.ReplicaStatus{Group: gid, ReplicaID: rep.id, Node: id, LogFirst: 1, Term: g.term}
		_, rs.NonVoting = g.learners[rep.id]
		if w.caughtUp(g, rep) {
			rs.AppliedIndex, rs.LogLast = g.index, g.index
		} else {
			// Receiving the group's data as a snapshot, which a real node
			// counts per replica as its chunks arrive (raftnet.Heard).
			rs.SnapshotBytes = uint64(w.now.Sub(rep.addedAt).Seconds() * float64(w.params.SnapshotRate))
		}
		if w.leaderNode(g) != 0 {
			rs.LeaderReplica = g.leader
		}
		if g.leader == rep.id && rs.LeaderReplica != 0 {
			rs.Voters, rs.NonVoters, rs.ConfigChangeID = map[uint64]string{}, map[uint64]string{}, g.ccid
			rs.HeardAgoMs = map[uint64]int64{}
			for r, node := range g.voters {
				rs.Voters[r] = addrOf(node)
				if r != rep.id {
					rs.HeardAgoMs[r] = w.heardAgo(node, g.id, r)
				}
			}
			for r, node := range g.learners {
				rs.NonVoters[r] = addrOf(node)
				rs.HeardAgoMs[r] = w.heardAgo(node, g.id, r)
			}
		}
		st.Replicas = append(st.Replicas, rs)
	}
	return st
}

// heardAgo is how long ago a leader last heard replica r on node id: a
// heartbeat ago while the node is up and runs it, else since it went down.
func (w *world) heardAgo(id slotstore.NodeID, g slotstore.GroupID, r uint64) int64 {
	n := w.nodes[id]
	switch {
	case n != nil && n.up && n.replicas[g] != nil && n.replicas[g].id == r:
		return 50
	case n != nil && !n.downSince.IsZero():
		return w.now.Sub(n.downSince).Milliseconds()
	}
	return -1
}

// addrOf is a node's address in the simulation (Raft and peer alike).
func addrOf(id slotstore.NodeID) string { return fmt.Sprintf("sim-n%d", id) }
