package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"

	"github.com/slotmeta/slotmeta/internal/crashlog"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/engine/raftnet"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestAReplicaThatCrashesItsProcessIsNotStartedAgain (issue 51): a
// replica whose log holds an entry the engine panics on as it replays it
// — on its own apply worker, which nothing can recover — ends its process.
// Started again, as a supervisor does, the node replays that replica
// alone and ends again; the third process does not start it, reports it
// failed with the last crash's first line, and serves its other group.
// Each node process is this test binary run again (a child).
func TestAReplicaThatCrashesItsProcessIsNotStartedAgain(t *testing.T) {
	if os.Getenv(crashChildDir) != "" {
		crashChild(t)
		return
	}
	if testing.Short() {
		t.Skip("runs node processes")
	}
	dir, addr := t.TempDir(), freeAddr(t)
	run := func(mode string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAReplicaThatCrashesItsProcessIsNotStartedAgain$", "-test.v")
		cmd.Env = append(os.Environ(), crashChildDir+"="+dir, crashChildAddr+"="+addr, crashChildMode+"="+mode)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("up"); err != nil {
		t.Fatalf("the first process: %v\n%s", err, out)
	}
	appendUnappliableEntry(t, dir, addr, 1)

	const why = "not session managed, not empty" // the engine's panic (internal/rsm/statemachine.go handleEntry)
	for i := 1; i <= crashesToGiveUpForTest; i++ {
		out, err := run("status")
		if err == nil || !strings.Contains(out, why) {
			t.Fatalf("process %d did not end on the damaged replica: %v\n%s", i+1, err, out)
		}
	}
	out, err := run("status")
	if err != nil {
		t.Fatalf("the process after the crashes: %v\n%s", err, out)
	}
	var got crashStatus
	line := out[strings.Index(out, statusPrefix)+len(statusPrefix):]
	if err := json.Unmarshal([]byte(line[:strings.IndexByte(line, '\n')]), &got); err != nil {
		t.Fatalf("no status: %v\n%s", err, out)
	}
	if len(got.Failed) != 1 || got.Failed[0].Group != 1 || !got.Failed[0].Panicked ||
		!strings.Contains(got.Failed[0].Reason, "ended 2 times") || !strings.Contains(got.Failed[0].Reason, "panic: "+why) {
		t.Fatalf("failures reported: %+v\n%s", got.Failed, out)
	}
	if !strings.Contains(got.NotReady, "failed to start") || !got.ServesOther {
		t.Fatalf("readiness %q, serves group 2: %v\n%s", got.NotReady, got.ServesOther, out)
	}
}

const crashesToGiveUpForTest = 2 // replicas.crashesToGiveUp

// The child's environment.
const (
	crashChildDir  = "SLOTMETA_CRASH_CHILD_DIR"
	crashChildAddr = "SLOTMETA_CRASH_CHILD_ADDR"
	crashChildMode = "SLOTMETA_CRASH_CHILD_MODE"
	statusPrefix   = "CRASH-CHILD-STATUS "
)

// crashStatus is what a child that did not crash says.
type crashStatus struct {
	Failed      []slotstore.ReplicaFailure
	NotReady    string
	ServesOther bool
}

func crashChildConfig(t *testing.T) Config {
	cfg := testConfig(t, os.Getenv(crashChildDir), os.Getenv(crashChildAddr))
	cfg.GroupCount = 2
	return cfg
}

// crashChild is one node process: "up" starts a one-node cluster with two
// groups, writes to both and closes; "status" starts it and prints, once
// group 1's replica failed and group 2 serves (or after 20 s), what it sees.
func crashChild(t *testing.T) {
	cfg := crashChildConfig(t)
	last, err := crashlog.Keep(cfg.DataDir) // as cmd/server does
	if err != nil {
		t.Fatal(err)
	}
	cfg.LastCrash = last
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keyOf := func(n *Node, g slotstore.GroupID) string {
		for i := 0; ; i++ {
			if k := fmt.Sprintf("k-%d", i); n.Routes().Table().Group(slotstore.HashSlotOfString(k)) == g {
				return k
			}
		}
	}
	if os.Getenv(crashChildMode) == "up" {
		n := startNode(t, cfg)
		defer n.Close()
		for _, g := range []slotstore.GroupID{1, 2} {
			if res, _, err := n.Propose(ctx, &meta.PutKV{Key: keyOf(n, g), Value: []byte("v")}); err != nil || !res.OK() {
				t.Fatalf("put to group %d: %v %+v", g, err, res)
			}
		}
		return
	}
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var st crashStatus
	tick := time.NewTicker(20 * time.Millisecond) // polls this child process's own node
	defer tick.Stop()
	for ; ctx.Err() == nil; <-tick.C {
		st.Failed = n.LocalStatus(ctx).Failed
		k := keyOf(n, 2)
		v, info, err := n.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Local)
		kv, _ := v.(*meta.KV)
		st.ServesOther = err == nil && kv != nil && info.ServedBy == n.NodeID()
		if len(st.Failed) > 0 && st.ServesOther {
			break
		}
	}
	if err := n.Ready(); err != nil {
		st.NotReady = err.Error()
	}
	data, _ := json.Marshal(st)
	fmt.Printf("%s%s\n", statusPrefix, data)
}

// appendUnappliableEntry appends to the log of the node's replica of g,
// offline, a committed entry the engine panics on as it applies it: an
// application entry outside any client session that carries a command.
func appendUnappliableEntry(t *testing.T, dir, addr string, g slotstore.GroupID) {
	t.Helper()
	cfg := testConfig(t, dir, addr)
	cfg.GroupCount = 2
	cfg.EnsureDefaults()
	workers, err := raftlog.ResolveWorkers(dir, cfg.RaftWorkers)
	if err != nil {
		t.Fatal(err)
	}
	logdb := &raftlog.Factory{}
	nhc := nodeHostConfig(&cfg, filepath.Join(dir, "raft"), workers, logdb)
	nhc.Expert.TransportFactory = raftnet.Silent{}
	nh, err := dragonboat.NewNodeHost(nhc)
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	shard := controller.ShardOf(g)
	i := slices.IndexFunc(nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{}).LogInfo, func(li raftio.NodeInfo) bool { return li.ShardID == shard })
	if i < 0 {
		t.Fatalf("no replica of group %d on disk", g)
	}
	replica := nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{}).LogInfo[i].ReplicaID
	db := logdb.Raw()
	ss, err := db.GetSnapshot(shard, replica)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := db.ReadRaftState(shard, replica, ss.Index)
	if err != nil {
		t.Fatal(err)
	}
	last := ss.Index
	if rs.EntryCount > 0 {
		last = rs.FirstIndex + rs.EntryCount - 1
	}
	st := rs.State
	st.Commit = last + 1
	ent := pb.Entry{Index: last + 1, Term: st.Term, Type: pb.ApplicationEntry, Cmd: []byte("unappliable")}
	if err := db.SaveRaftState([]pb.Update{{ShardID: shard, ReplicaID: replica, EntriesToSave: []pb.Entry{ent}, State: st}}, 1); err != nil {
		t.Fatal(err)
	}
}
