package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func bootstrapCmd(t *testing.T, nodes, groups, rf int) []byte {
	t.Helper()
	b := &Bootstrap{ClusterID: "c1", GroupCount: groups, ReplicationFactor: rf}
	for i := nodes; i >= 1; i-- { // out of order on purpose
		b.Nodes = append(b.Nodes, Node{ID: slotstore.NodeID(i), RaftAddr: fmt.Sprintf("127.0.0.1:%d", 9000+i)})
	}
	cmd, err := EncodeCommand(Command{TimeMs: 1000, Bootstrap: b})
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

func update(t *testing.T, s *StateMachine, index uint64, cmd []byte) Result {
	t.Helper()
	res, err := s.Update(sm.Entry{Index: index, Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(res.Data, &r); err != nil {
		t.Fatal(err)
	}
	if r.OK != (res.Value == 1) {
		t.Fatalf("result value %d disagrees with %+v", res.Value, r)
	}
	return r
}

func TestBootstrapPlacement(t *testing.T) {
	for _, tc := range []struct{ nodes, groups, rf, wantRF int }{
		{1, 8, 3, 1}, {3, 8, 3, 3}, {5, 10, 3, 3}, {4, 8, 5, 4},
	} {
		t.Run(fmt.Sprintf("n%d-g%d-rf%d", tc.nodes, tc.groups, tc.rf), func(t *testing.T) {
			var changes int
			s := NewStateMachine(func(*State) { changes++ })
			if r := update(t, s, 1, bootstrapCmd(t, tc.nodes, tc.groups, tc.rf)); !r.OK {
				t.Fatalf("bootstrap: %+v", r)
			}
			st := s.Snapshot()
			if !st.Bootstrapped || st.RouteRevision != 1 || st.ReplicationFactor != tc.wantRF || changes != 1 || st.AppliedIndex != 1 {
				t.Fatalf("state %+v, %d change notifications", st, changes)
			}
			table, err := st.Table()
			if err != nil {
				t.Fatal(err)
			}
			replicas := map[slotstore.NodeID]int{}
			preferred := map[slotstore.NodeID]int{}
			for _, id := range st.GroupIDs() {
				g := st.Groups[id]
				if len(g.Peers) != tc.wantRF || g.ConfigEpoch != 1 {
					t.Fatalf("group %d: %+v", id, g)
				}
				if _, ok := g.Peers[g.PreferredLeader]; !ok {
					t.Fatalf("group %d prefers %d, not one of its peers", id, g.PreferredLeader)
				}
				for n, r := range g.Peers {
					if r != uint64(n) {
						t.Fatalf("initial replica of node %d has id %d", n, r)
					}
					replicas[n]++
				}
				preferred[g.PreferredLeader]++
				if len(table.SlotsOf(id)) == 0 || !reflect.DeepEqual(st.GenesisSlots(id), table.SlotsOf(id)) {
					t.Fatalf("group %d genesis %v vs table %v", id, st.GenesisSlots(id), table.SlotsOf(id))
				}
			}
			spread := func(m map[slotstore.NodeID]int, what string) {
				lo, hi := 1<<30, 0
				for i := 1; i <= tc.nodes; i++ {
					lo, hi = min(lo, m[slotstore.NodeID(i)]), max(hi, m[slotstore.NodeID(i)])
				}
				if hi-lo > 1 {
					t.Fatalf("%s spread unevenly: %v", what, m)
				}
			}
			spread(replicas, "replicas")
			spread(preferred, "preferred leaders")
			if st.NextReplicaID != uint64(tc.nodes)+1 {
				t.Fatalf("next replica id %d", st.NextReplicaID)
			}
		})
	}
}

func TestBootstrapOnlyOnce(t *testing.T) {
	s := NewStateMachine(nil)
	update(t, s, 1, bootstrapCmd(t, 3, 8, 3))
	before := s.Snapshot()
	if r := update(t, s, 2, bootstrapCmd(t, 5, 16, 3)); r.OK {
		t.Fatal("a second bootstrap applied")
	}
	after := s.Snapshot()
	after.AppliedIndex = before.AppliedIndex
	if !reflect.DeepEqual(before, after) {
		t.Fatal("a refused bootstrap changed the state")
	}
}

func TestMalformedCommandIsAnsweredNotApplied(t *testing.T) {
	s := NewStateMachine(nil)
	for i, cmd := range [][]byte{nil, []byte("{"), []byte(`{"v":2,"bootstrap":{}}`), []byte(`{"v":1}`),
		[]byte(`{"v":1,"bootstrap":{"cluster_id":"c","group_count":0,"replication_factor":1,"nodes":[{"id":1,"raft_addr":"a:1"}]}}`),
		[]byte(`{"v":1,"bootstrap":{"cluster_id":"c","group_count":4,"replication_factor":1,"nodes":[{"id":1,"raft_addr":"a:1"},{"id":1,"raft_addr":"a:2"}]}}`)} {
		if r := update(t, s, uint64(i+1), cmd); r.OK || r.Message == "" {
			t.Fatalf("command %d (%q): %+v", i, cmd, r)
		}
	}
	if s.Snapshot().Bootstrapped {
		t.Fatal("a malformed command bootstrapped the cluster")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := NewStateMachine(nil)
	update(t, s, 7, bootstrapCmd(t, 3, 8, 3))
	var buf bytes.Buffer
	if err := s.SaveSnapshot(&buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	var got *State
	r := NewStateMachine(func(st *State) { got = st })
	if err := r.RecoverFromSnapshot(bytes.NewReader(buf.Bytes()), nil, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Snapshot(), r.Snapshot()) || got == nil || got.AppliedIndex != 7 {
		t.Fatal("recovered state differs")
	}
	if err := r.RecoverFromSnapshot(bytes.NewReader([]byte("{garbage")), nil, nil); err == nil {
		t.Fatal("a corrupt snapshot was accepted")
	}
	if !reflect.DeepEqual(s.Snapshot(), r.Snapshot()) {
		t.Fatal("a rejected snapshot changed the state")
	}
}

func TestShardMapping(t *testing.T) {
	for _, g := range []slotstore.GroupID{1, 8, 256, 1 << 20} {
		back, ok := GroupOfShard(ShardOf(g))
		if !ok || back != g || ShardOf(g) == ShardID {
			t.Fatalf("group %d ↔ shard %d", g, ShardOf(g))
		}
	}
	if _, ok := GroupOfShard(ShardID); ok {
		t.Fatal("the controller shard maps to a slot group")
	}
}

func encode(t *testing.T, c Command) []byte {
	t.Helper()
	b, err := EncodeCommand(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRegisterAndActivateNode(t *testing.T) {
	s := NewStateMachine(nil)
	n4 := Node{ID: 4, RaftAddr: "127.0.0.1:9004", APIAddr: "127.0.0.1:8004"}
	if r := update(t, s, 1, encode(t, Command{RegisterNode: &RegisterNode{Node: n4}})); r.OK || r.Code != slotstore.CodeRouteNotReady {
		t.Fatalf("register before bootstrap: %+v", r)
	}
	update(t, s, 2, bootstrapCmd(t, 3, 4, 3))
	if r := update(t, s, 3, encode(t, Command{TimeMs: 50, RegisterNode: &RegisterNode{Node: n4}})); !r.OK {
		t.Fatalf("register: %+v", r)
	}
	st := s.Snapshot()
	if got := st.Nodes[4]; got == nil || got.State != NodeJoining || got.JoinedAtMs != 50 || !reflect.DeepEqual(got.Roles, []slotstore.NodeRole{slotstore.RoleData}) {
		t.Fatalf("registered node %+v", got)
	}
	if r := update(t, s, 4, encode(t, Command{RegisterNode: &RegisterNode{Node: n4}})); !r.OK {
		t.Fatalf("registering again must be a no-op that succeeds: %+v", r)
	}
	for i, bad := range []Node{{ID: 4, RaftAddr: "127.0.0.1:1"}, {ID: 5, RaftAddr: "127.0.0.1:9004"}, {ID: 5}} {
		if r := update(t, s, uint64(5+i), encode(t, Command{RegisterNode: &RegisterNode{Node: bad}})); r.OK || r.Code == "" {
			t.Fatalf("conflicting registration %+v: %+v", bad, r)
		}
	}
	if r := update(t, s, 10, encode(t, Command{SetNodeState: &SetNodeState{ID: 4, State: NodeActive}})); !r.OK {
		t.Fatalf("activate: %+v", r)
	}
	if s.Snapshot().Nodes[4].State != NodeActive {
		t.Fatal("node not active")
	}
	if r := update(t, s, 11, encode(t, Command{SetNodeState: &SetNodeState{ID: 9, State: NodeActive}})); r.Code != slotstore.CodeNotFound {
		t.Fatalf("unknown node: %+v", r)
	}
	if r := update(t, s, 12, encode(t, Command{SetNodeState: &SetNodeState{ID: 4, State: "sleepy"}})); r.Code != slotstore.CodeInvalidArgument {
		t.Fatalf("bad state: %+v", r)
	}
	if r := update(t, s, 13, encode(t, Command{Bootstrap: &Bootstrap{}, SetNodeState: &SetNodeState{ID: 4, State: NodeActive}})); r.OK {
		t.Fatal("a command with two bodies applied")
	}
}

// TestPlacementSpreadsAGroupApart: the founding placement puts each node
// the same number of replicas (give or take one) and a group's replicas
// N/rf apart in the id order, so that no block of N/rf consecutive node
// ids — a rack numbered in order — holds two replicas of one group, and
// every replica of a group is on a distinct node.
func TestPlacementSpreadsAGroupApart(t *testing.T) {
	for _, tc := range []struct{ nodes, groups, rf int }{
		{3, 8, 3}, {4, 8, 3}, {6, 6, 3}, {7, 20, 3}, {20, 20, 3}, {100, 100, 3}, {100, 256, 5}, {1000, 256, 3},
	} {
		var nodes []slotstore.NodeID
		for i := 1; i <= tc.nodes; i++ {
			nodes = append(nodes, slotstore.NodeID(i))
		}
		var groups []slotstore.GroupID
		for i := 1; i <= tc.groups; i++ {
			groups = append(groups, slotstore.GroupID(i))
		}
		count := map[slotstore.NodeID]int{}
		block := max(1, tc.nodes/tc.rf)
		for _, p := range Placement(groups, nodes, tc.rf) {
			seen := map[slotstore.NodeID]bool{}
			for _, n := range p.Nodes {
				if seen[n] {
					t.Fatalf("%+v: group %d has node %d twice: %v", tc, p.Group, n, p.Nodes)
				}
				seen[n] = true
				count[n]++
			}
			if tc.nodes < 2*tc.rf {
				continue // too few nodes to keep replicas apart
			}
			for start := 1; start <= tc.nodes; start++ {
				in := 0
				for _, n := range p.Nodes {
					if d := (int(n) - start + tc.nodes) % tc.nodes; d < block {
						in++
					}
				}
				if in > 1 {
					t.Fatalf("%+v: group %d on %v: %d replicas among the %d ids from %d", tc, p.Group, p.Nodes, in, block, start)
				}
			}
		}
		lo, hi := tc.groups, 0
		for _, n := range nodes {
			lo, hi = min(lo, count[n]), max(hi, count[n])
		}
		if hi-lo > tc.rf {
			t.Fatalf("%+v: replicas per node from %d to %d", tc, lo, hi)
		}
	}
}
