package ctrlrecovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	pb "github.com/lni/dragonboat/v4/raftpb"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/lni/dragonboat/v4/tools"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Options say what Run does.
type Options struct {
	// AcceptDataLoss rebuilds the controller group from this node's
	// replica (the base); false only reports (unless Rejoin).
	AcceptDataLoss bool
	// Rejoin makes this node, another survivor, rejoin the controller
	// group recovered on node Base.
	Rejoin bool
	Base   slotstore.NodeID
	// Lost are the nodes lost for good.
	Lost []slotstore.NodeID
	// Timeout bounds the replay of the replica's log (default 1 minute).
	Timeout time.Duration
}

// Report is what Run found and did.
type Report struct {
	Node slotstore.NodeID `json:"node"`
	Role string           `json:"role"`
	// Term, Commit and Last are the replica's Raft state as saved;
	// Applied what its state machine holds after replaying to Commit.
	Term    uint64 `json:"term"`
	Commit  uint64 `json:"commit"`
	Applied uint64 `json:"applied"`
	Last    uint64 `json:"last"`
	// Tail counts the commands logged past Commit (applied by the
	// recovery), TailConfig the membership changes among them (dropped).
	Tail       int `json:"tail"`
	TailConfig int `json:"tail_config"`
	// Voters and NonVoting are the controller group's members as the
	// replica's state knows them.
	Voters    []slotstore.NodeID `json:"voters"`
	NonVoting []slotstore.NodeID `json:"non_voting"`
	// Done says what was done: "status", "recovered" or "rejoins".
	Done string `json:"done"`
	ID   string `json:"id,omitempty"`
}

// Check refuses options that contradict themselves for node self, before
// anything is opened or written.
func (o Options) Check(self slotstore.NodeID) error {
	switch {
	case o.AcceptDataLoss && o.Rejoin:
		return errors.New("cluster: a node is either the base of the recovery or rejoins it")
	case (o.AcceptDataLoss || o.Rejoin) && len(o.Lost) == 0:
		return errors.New("cluster: name the nodes lost for good")
	case slices.Contains(o.Lost, self):
		return fmt.Errorf("cluster: node %d is named lost", self)
	case o.Rejoin && (o.Base == 0 || o.Base == self || slices.Contains(o.Lost, o.Base)):
		return fmt.Errorf("cluster: a rejoining node names the base, another node not lost (got %d)", o.Base)
	}
	return nil
}

// Config is the stopped node Run works on.
type Config struct {
	DataDir  string
	NodeID   slotstore.NodeID
	RaftAddr string
	// NodeHost configures the offline NodeHost (its transport silent: it
	// neither listens nor sends); LogDB is its Raft log.
	NodeHost config.NodeHostConfig
	LogDB    *raftlog.Factory
	// Shard is the controller replica's configuration, as a voter or not.
	Shard func(nonVoting bool) config.Config
}

// Run runs o on the stopped node cfg describes: it reports, or it makes
// the node the base of the recovery, or it makes it rejoin one.
func Run(ctx context.Context, cfg Config, o Options) (Report, error) {
	self := cfg.NodeID
	if err := o.Check(self); err != nil {
		return Report{}, err
	}
	nhc := cfg.NodeHost
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(o.Timeout, time.Minute))
	defer cancel()
	nh, err := dragonboat.NewNodeHost(nhc)
	if err != nil {
		return Report{}, fmt.Errorf("cluster: open the Raft data (is the node still running?): %w", err)
	}
	open := true
	closeNH := func() { // dragonboat panics on a second Close
		if open {
			open = false
			nh.Close()
		}
	}
	defer closeNH()
	r, st, tail, err := readController(ctx, nh, cfg)
	if err != nil || (!o.AcceptDataLoss && !o.Rejoin) {
		return r, err
	}
	// Everything is checked before anything is written.
	lost := make([]string, 0, len(o.Lost))
	for _, id := range o.Lost {
		node, ok := st.Nodes[id]
		if !ok {
			return r, fmt.Errorf("cluster: node %d is not a node of the cluster", id)
		}
		lost = append(lost, node.RaftAddr)
	}
	rec := Record{Node: self, Index: r.Commit, Term: r.Term, Lost: o.Lost, LostRaftAddrs: lost, AtMs: time.Now().UnixMilli()}
	if o.Rejoin {
		base, ok := st.Nodes[o.Base]
		if !ok || base.APIAddr == "" {
			return r, fmt.Errorf("cluster: node %d, the base, has no API address in the controller's state", o.Base)
		}
		rec.Rejoin, rec.JoinVia, rec.Node = true, base.APIAddr, o.Base
		// The record before the removal: a founding node that lost its
		// controller replica without it would found a controller anew.
		if err := WriteRecord(cfg.DataDir, rec); err != nil {
			return r, err
		}
		if err := nh.StopReplica(controller.ShardID, uint64(self)); err != nil {
			return r, err
		}
		if err := removeReplicaData(ctx, nh, nhc.NodeHostDir, controller.ShardID, uint64(self)); err != nil {
			return r, fmt.Errorf("cluster: remove the controller replica's Raft data: %w", err)
		}
		r.Done = "rejoins"
		return r, WriteRole(cfg.DataDir, RoleNonVoting)
	}
	exportDir := filepath.Join(cfg.DataDir, "controller-export")
	defer os.RemoveAll(exportDir) // scratch, whatever happens
	exported, err := exportController(ctx, nh, exportDir, r.Commit)
	closeNH() // tools.ImportSnapshot opens the Raft data itself
	if err != nil {
		return r, err
	}
	rec.ID = strconv.FormatUint(uint64(self), 10) + "-" + strconv.FormatUint(r.Commit, 10) + "-" + strconv.FormatInt(rec.AtMs, 10)
	rec.Tail = tail
	if err := asOnlyVoter(exported, uint64(self), cfg.RaftAddr, o.Lost); err != nil {
		return r, err
	}
	// The record first: a node started on an import must fence the lost
	// nodes (an import without its record never happens; a record without
	// its import fences a controller that cannot elect: run it again).
	if err := WriteRecord(cfg.DataDir, rec); err != nil {
		return r, err
	}
	// tools.ImportSnapshot: the snapshot becomes the replica's, its
	// membership the one given, its log emptied up to it (ILogDB.ImportSnapshot).
	if err := tools.ImportSnapshot(nhc, exported, map[uint64]string{uint64(self): cfg.RaftAddr}, uint64(self)); err != nil {
		return r, fmt.Errorf("cluster: import the controller's state: %w", err)
	}
	if err := WriteRole(cfg.DataDir, RoleVoter); err != nil {
		return r, err
	}
	r.Done, r.ID = "recovered", rec.ID
	return r, nil
}

// readController reads the controller replica's log state and tail from
// the offline NodeHost nh, replays the replica to its commit and returns
// its state; the replica keeps running on nh.
func readController(ctx context.Context, nh *dragonboat.NodeHost, cfg Config) (
	r Report, st *controller.State, tail [][]byte, err error) {
	self := uint64(cfg.NodeID)
	if !nh.HasNodeInfo(controller.ShardID, self) {
		return r, nil, nil, fmt.Errorf("cluster: node %d holds no controller replica here", cfg.NodeID)
	}
	role, err := ReadRole(cfg.DataDir)
	if err != nil {
		return r, nil, nil, err
	}
	r = Report{Node: cfg.NodeID, Role: string(role), Done: "status"}
	state, err := cfg.LogDB.ReadTail(controller.ShardID, self, math.MaxUint64-1, 0)
	if err != nil {
		return r, nil, nil, err
	}
	r.Term, r.Commit, r.Last = state.Term, state.Commit, state.Last
	t, err := cfg.LogDB.ReadTail(controller.ShardID, self, state.Commit, 64<<20)
	if err != nil {
		return r, nil, nil, err
	}
	if !t.Complete {
		return r, nil, nil, fmt.Errorf("cluster: the controller's log holds more than 64 MiB past its commit %d", state.Commit)
	}
	for _, e := range t.Entries {
		cmd, ok, err := raftlog.Payload(e)
		switch {
		case err != nil:
			return r, nil, nil, err
		case ok:
			tail = append(tail, cmd)
		case e.Type == pb.ConfigChangeEntry:
			r.TailConfig++
		}
	}
	r.Tail = len(tail)
	if len(tail) > controller.MaxControllerTail {
		return r, nil, nil, fmt.Errorf("cluster: %d commands logged past the commit, at most %d: recover from a survivor that knew more committed", len(tail), controller.MaxControllerTail)
	}
	machine := controller.NewStateMachine(nil)
	scfg := cfg.Shard(role == RoleNonVoting)
	if err := nh.StartReplica(nil, false, func(uint64, uint64) sm.IStateMachine { return machine }, scfg); err != nil {
		return r, nil, nil, fmt.Errorf("cluster: start the controller replica offline: %w", err)
	}
	for st = machine.Snapshot(); st.AppliedIndex < state.Commit; st = machine.Snapshot() {
		select {
		case <-ctx.Done():
			return r, nil, nil, fmt.Errorf("cluster: the controller replica applied %d of %d: %w", st.AppliedIndex, state.Commit, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.Applied = st.AppliedIndex
	r.Voters, r.NonVoting = append([]slotstore.NodeID{}, votersOf(nh)...), []slotstore.NodeID{}
	for _, id := range st.NodeIDs() {
		if st.Nodes[id].State != controller.NodeRemoved && !slices.Contains(r.Voters, id) {
			r.NonVoting = append(r.NonVoting, id)
		}
	}
	return r, st, tail, nil
}
