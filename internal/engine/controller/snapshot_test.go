package controller

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The controller's state is replicated: its snapshot JSON is what every
// node restarts from and what a joining node receives. A renamed or
// retyped field would make a snapshot written before the change decode
// without it (encoding/json drops what it does not know), so a change to
// the state's JSON must be deliberate: testdata/snapshot.golden.json holds
// a snapshot with one of everything, written by the code of 2026-12-03.

var updateGolden = flag.Bool("update", false, "rewrite testdata/snapshot.golden.json from the current code")

const goldenSnapshot = "testdata/snapshot.golden.json"

// oldSnapshots are snapshots earlier code wrote (before decisions were
// numbered: 2026-12-03), which today's code must read and write back alike.
var oldSnapshots = []string{"testdata/snapshot-2026-12-03.json", goldenSnapshot}

// richState applies one of every kind of command to a new state machine.
func richState(t *testing.T) *StateMachine {
	t.Helper()
	s := NewStateMachine(nil)
	idx := uint64(0)
	apply := func(c Command) {
		t.Helper()
		idx++
		c.TimeMs = 1_700_000_000_000 + int64(idx)*1000
		if r := update(t, s, idx, encode(t, c)); !r.OK {
			t.Fatalf("command %d %+v: %+v", idx, c, r)
		}
	}
	apply(Command{Bootstrap: &Bootstrap{ClusterID: "golden", GroupCount: 3, ReplicationFactor: 3, PeerSecret: strings.Repeat("s", 64),
		Nodes: []Node{{ID: 1, RaftAddr: "10.0.0.1:9080", APIAddr: "10.0.0.1:8080", PeerAddr: "10.0.0.1:9180"},
			{ID: 2, RaftAddr: "10.0.0.2:9080"}, {ID: 3, RaftAddr: "10.0.0.3:9080"}}}})
	apply(Command{RegisterNode: &RegisterNode{Node: Node{ID: 4, RaftAddr: "10.0.0.4:9080"}}})
	apply(Command{SetNodeState: &SetNodeState{ID: 4, State: slotstore.NodeActive}})
	apply(Command{SetPreferred: &SetPreferred{Group: 2, Node: 3}})
	apply(Command{Decision: &Decision{Group: 1, Kind: "transfer", Reason: "preferred", Leader: 2, Term: 7, PreferredLeader: 1}})
	apply(Command{CreateMove: &CreateMove{Group: 1, From: 3, To: 4}})
	apply(Command{AdvanceTask: &AdvanceTask{ID: 1, ExpectedPhase: PhaseAddLearner, Phase: PhaseCatchUp,
		Observed: &PhaseRecord{Phase: PhaseAddLearner, Voters: []uint64{1, 2, 3}, Learners: []uint64{5}, ConfigChangeID: 9}}})
	apply(Command{CreateGroup: &CreateGroup{Peers: []slotstore.NodeID{1, 2, 4}}})
	apply(Command{Audit: &AuditRecord{Who: "ops-alice", Role: "admin", Via: "token", Action: "POST /v1/cluster/groups", Target: "/v1/cluster/groups",
		Node: 1, Source: "10.0.0.9", Status: 202, Outcome: slotstore.AuditOK}})
	apply(Command{RaftTiming: &SetRaftTiming{Node: 2, Timing: RaftTiming{RTTMs: 50, ElectionRTT: 20}}})
	apply(Command{SetBalancer: &SetBalancer{Paused: true}})
	apply(Command{DrainNode: &DrainNode{ID: 3}})
	return s
}

func snapshotOf(t *testing.T, s *StateMachine) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.SaveSnapshot(&buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSnapshotGolden: today's code writes the golden snapshot, byte for
// byte (`go test ./internal/engine/controller -run TestSnapshotGolden -args -update`
// rewrites it, for a change
// of the state's JSON that is meant, with a migration for old snapshots).
func TestSnapshotGolden(t *testing.T) {
	got := snapshotOf(t, richState(t))
	if *updateGolden {
		if err := os.WriteFile(goldenSnapshot, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the controller's snapshot JSON changed (a renamed or retyped field of replicated state?):\n got %s\nwant %s", got, want)
	}
}

// TestOldSnapshotStillDecodes: each old snapshot and the golden one,
// recovered and saved again, are the same bytes — no field of them is lost
// or read differently.
func TestOldSnapshotStillDecodes(t *testing.T) {
	for _, path := range oldSnapshots {
		t.Run(path, func(t *testing.T) { oldSnapshotDecodes(t, path) })
	}
}

func oldSnapshotDecodes(t *testing.T, path string) {
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStateMachine(nil)
	if err := s.RecoverFromSnapshot(bytes.NewReader(old), nil, nil); err != nil {
		t.Fatal(err)
	}
	if again := snapshotOf(t, s); !bytes.Equal(again, old) {
		t.Fatalf("%s does not survive recovery:\n got %s\nwant %s", path, again, old)
	}
	st := s.Snapshot()
	if st.ClusterID != "golden" || len(st.Nodes) != 4 || len(st.Tasks) != 2 || st.PeerSecret == "" || !st.Balancer.Paused ||
		st.Nodes[3].State != slotstore.NodeDraining || len(st.Audit) != 1 || len(st.Decisions) == 0 {
		t.Fatalf("recovered state lacks what the golden snapshot holds: %+v", st)
	}
}
