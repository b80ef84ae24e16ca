package chaos

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Network and disk faults (package slotstore/faults, through the harness's
// Faults option): a node cut off both ways, a partition, one direction of a
// link cut or lossy, a slow fsync, and a follower kept away long enough that
// it must catch up by snapshot. Each is healed by its heal func (Heal the
// network, or a zero sync delay). Targets are drawn from the cluster's state
// so that group leaders and the controller leader are hit often.

// injectIsolate cuts one node off from every other, both ways.
func injectIsolate(f *faultEnv) (string, func()) {
	x := f.target()
	f.tc.c.Net.Isolate(x)
	return fmt.Sprintf("isolate n%d%s", x, f.tc.roleOf(x)), f.tc.c.Net.Heal
}

// injectPartition splits the nodes in two sides around a target: it alone
// against the rest, it and one more against the rest (2|2: the controller's
// four voters lose their quorum), or it alone against two others while the
// remaining node reaches both sides (a bridge: not transitive).
func injectPartition(f *faultEnv) (string, func()) {
	x := f.target()
	others := f.others(x)
	var a, b []slotstore.NodeID
	switch shape := f.rng.Intn(3); {
	case shape == 1 && len(others) >= 3:
		a, b = []slotstore.NodeID{x, others[0]}, others[1:]
	case shape == 2 && len(others) >= 3:
		a, b = []slotstore.NodeID{x}, others[:2]
	default:
		a, b = []slotstore.NodeID{x}, others
	}
	slices.Sort(a)
	slices.Sort(b)
	f.tc.c.Net.Partition(a, b)
	return fmt.Sprintf("partition %s | %s%s", nodeSet(a), nodeSet(b), f.tc.roleOf(x)), f.tc.c.Net.Heal
}

// injectOneWay cuts one direction between a target and another node.
func injectOneWay(f *faultEnv) (string, func()) {
	from, to := f.link()
	f.tc.c.Net.DropOneWay(from, to)
	return fmt.Sprintf("one-way n%d→n%d", from, to), f.tc.c.Net.Heal
}

// injectLossy drops 30% of one direction between a target and another node.
func injectLossy(f *faultEnv) (string, func()) {
	from, to := f.link()
	f.tc.c.Net.Lossy(from, to, 0.3, f.rng.Uint64())
	return fmt.Sprintf("lossy n%d→n%d p=0.3", from, to), f.tc.c.Net.Heal
}

// injectSlowDisk delays every fsync of a node's Raft log and store by 20–50 ms.
func injectSlowDisk(f *faultEnv) (string, func()) {
	x := f.target()
	if f.rng.Intn(2) == 0 { // half the time the leader of the busiest group: syncs on every write
		if l := f.tc.groupLeader(f.tc.busyGroup(f.rng)); l != 0 {
			x = l
		}
	}
	d := time.Duration(20+f.rng.Intn(31)) * time.Millisecond
	disk := f.tc.c.Disk(int(x) - 1)
	disk.SetSyncDelay(d)
	return fmt.Sprintf("slow-disk n%d %v%s", x, d, f.tc.roleOf(x)), func() { disk.SetSyncDelay(0) }
}

// injectLag isolates a follower of the group the clients write most (for
// the lag kind's longer hold) while the clients keep writing, and writes
// lagFill more entries into that group itself (keys outside the checked
// histories), so that however slow the clients are, the leader, which
// snapshots every SnapshotEntries entries and keeps CompactionOverhead
// behind, compacts its log past the follower's position. After the heal
// the follower must catch up by installing a snapshot.
func injectLag(f *faultEnv) (string, func()) {
	g := f.tc.busyGroup(f.rng)
	leader := f.tc.groupLeader(g)
	var followers []slotstore.NodeID
	if grp, ok := f.tc.ctrlState().Groups[g]; ok {
		for _, n := range grp.PeerNodes() {
			if n != leader {
				followers = append(followers, n)
			}
		}
	}
	if len(followers) == 0 {
		followers = f.others(leader)
	}
	x := followers[f.rng.Intn(len(followers))]
	f.tc.c.Net.Isolate(x)
	filled := f.tc.fill(g, x, lagFill, 2*time.Second)
	return fmt.Sprintf("lag n%d (follower of g%d, leader n%d, +%d writes)", x, g, leader, filled), f.tc.c.Net.Heal
}

// lagFill is how many writes injectLag adds: twice the chaos cluster's
// SnapshotEntries, so the leader takes a snapshot at least SnapshotEntries
// past the lagging follower and compacts past it.
const lagFill = 64

// fill writes up to n fresh keys of group g (named "fill-…", never read by
// the clients) through the nodes other than skip, one at a time, within d.
// It returns how many were acknowledged.
func (tc *testCluster) fill(g slotstore.GroupID, skip slotstore.NodeID, n int, d time.Duration) int {
	tbl := tc.c.Nodes[0].Routes().Table()
	if tbl == nil {
		return 0
	}
	deadline := time.Now().Add(d)
	acked := 0
	for i := 0; acked < n && time.Now().Before(deadline); i++ {
		tc.fillSeq++
		key := fmt.Sprintf("fill-%d", tc.fillSeq)
		if tbl.Group(slotstore.HashSlotOfString(key)) != g {
			continue
		}
		via := (int(skip) + i%(tc.size()-1)) % tc.size() // node index, never skip-1
		if a := tc.do(tc.url(via), request{method: "PUT", path: kvPath(key), body: `{"value":"x"}`}); a.code == 200 {
			acked++
		}
	}
	return acked
}

// target picks the node a fault hits: half the time the leader of a random
// group, a quarter the controller leader, else any node.
func (f *faultEnv) target() slotstore.NodeID {
	var x slotstore.NodeID
	switch p := f.rng.Intn(4); {
	case p < 2:
		x = f.tc.groupLeader(slotstore.GroupID(f.rng.Intn(f.tc.groups) + 1))
	case p == 2:
		x = f.tc.ctrlLeader()
	}
	if x == 0 {
		x = slotstore.NodeID(f.rng.Intn(f.tc.size()) + 1)
	}
	return x
}

// others lists every node but x, in a random order.
func (f *faultEnv) others(x slotstore.NodeID) []slotstore.NodeID {
	var out []slotstore.NodeID
	for i := 1; i <= f.tc.size(); i++ {
		if slotstore.NodeID(i) != x {
			out = append(out, slotstore.NodeID(i))
		}
	}
	f.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// link picks a directed pair: a target and another node, either way round.
func (f *faultEnv) link() (from, to slotstore.NodeID) {
	x := f.target()
	y := f.others(x)[0]
	if f.rng.Intn(2) == 0 {
		return x, y
	}
	return y, x
}

func nodeSet(ns []slotstore.NodeID) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprintf("n%d", n)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// ctrlState is the freshest controller state any node has applied.
func (tc *testCluster) ctrlState() *controller.State {
	var best *controller.State
	for _, n := range tc.c.Nodes {
		if st := n.Controller(); best == nil || st.AppliedIndex > best.AppliedIndex {
			best = st
		}
	}
	return best
}

// ctrlLeader is the node that believes it leads the controller (the lowest
// if a partition leaves two believing it), else the leader most nodes name.
func (tc *testCluster) ctrlLeader() slotstore.NodeID {
	votes := map[slotstore.NodeID]int{}
	var best slotstore.NodeID
	for _, n := range tc.c.Nodes {
		if l := n.ControllerLeader(); l == n.NodeID() {
			return l
		} else if l != 0 {
			votes[l]++
			if votes[l] > votes[best] {
				best = l
			}
		}
	}
	return best
}

// groupLeader is g's leader in the routing view with the highest term (0: none).
func (tc *testCluster) groupLeader(g slotstore.GroupID) slotstore.NodeID {
	var leader slotstore.NodeID
	var term uint64
	for _, n := range tc.c.Nodes {
		if st, ok := n.Routes().Group(g); ok && st.Leader != 0 && st.Term >= term {
			leader, term = st.Leader, st.Term
		}
	}
	return leader
}

// busyGroup is the group of a random business key, so a group is drawn in
// proportion to the keys the kv clients write in it.
func (tc *testCluster) busyGroup(rng *rand.Rand) slotstore.GroupID {
	k := kvKeys[rng.Intn(len(kvKeys))]
	if tbl := tc.c.Nodes[0].Routes().Table(); tbl != nil {
		return tbl.Group(slotstore.HashSlotOfString(k))
	}
	return slotstore.GroupID(rng.Intn(tc.groups) + 1)
}

// roleOf says which leaderships node x holds now, e.g. " (leads g1, controller)".
func (tc *testCluster) roleOf(x slotstore.NodeID) string {
	var roles []string
	for g := 1; g <= tc.groups; g++ {
		if tc.groupLeader(slotstore.GroupID(g)) == x {
			roles = append(roles, fmt.Sprintf("g%d", g))
		}
	}
	if tc.ctrlLeader() == x {
		roles = append(roles, "controller")
	}
	if len(roles) == 0 {
		return ""
	}
	return " (leads " + strings.Join(roles, ", ") + ")"
}
