package cluster

import (
	"cmp"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/lni/dragonboat/v4"
	pb "github.com/lni/dragonboat/v4/raftpb"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/lni/dragonboat/v4/tools"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/engine/raftnet"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Recovery of the controller group from a lost quorum (issue 29; the model
// in package controller, recovercontroller.go). It runs offline, on a
// stopped node's data directory (`slotmeta recover-controller`), over a
// NodeHost that neither listens nor sends (raftnet.Silent):
//
//   - Status (no confirmation): what this node's controller replica holds —
//     its role, term, commit, applied index and last log index — so that
//     the operator picks the most advanced survivor.
//   - The base (AcceptDataLoss): the replica applies what it knew
//     committed, its state is exported (dragonboat's exported snapshot),
//     its membership rewritten — itself the only voter, the lost nodes
//     removed, the other survivors out (they rejoin) — and imported
//     (tools.ImportSnapshot); the commands it logged past its commit and
//     the lost nodes are written to controller-recovery.json, which the
//     started node proposes (RecoverController) and fences by meanwhile.
//   - Every other survivor (Rejoin): its controller replica's Raft data is
//     removed (a log that may run past the base's would confuse the new
//     leader), and it starts as a new non-voting member through the base.

// ControllerRecovery says what RecoverController does.
type ControllerRecovery struct {
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

// ControllerRecoveryReport is what RecoverController found and did.
type ControllerRecoveryReport struct {
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

// controllerRecoveryFile is the record a recovery leaves in the data
// directory for the node to act on when it starts.
const controllerRecoveryFile = "controller-recovery.json"

// RecoverController runs o on the stopped node cfg configures.
func RecoverController(ctx context.Context, cfg Config, o ControllerRecovery) (ControllerRecoveryReport, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return ControllerRecoveryReport{}, err
	}
	if _, err := readRestoreSeed(&cfg); err != nil {
		return ControllerRecoveryReport{}, err
	}
	quietDragonboat() // as a node: its report, not the engine's lines
	self := cfg.NodeID
	switch {
	case o.AcceptDataLoss && o.Rejoin:
		return ControllerRecoveryReport{}, errors.New("cluster: a node is either the base of the recovery or rejoins it")
	case (o.AcceptDataLoss || o.Rejoin) && len(o.Lost) == 0:
		return ControllerRecoveryReport{}, errors.New("cluster: name the nodes lost for good")
	case slices.Contains(o.Lost, self):
		return ControllerRecoveryReport{}, fmt.Errorf("cluster: node %d is named lost", self)
	case o.Rejoin && (o.Base == 0 || o.Base == self || slices.Contains(o.Lost, o.Base)):
		return ControllerRecoveryReport{}, fmt.Errorf("cluster: a rejoining node names the base, another node not lost (got %d)", o.Base)
	}
	raftDir := filepath.Join(cfg.DataDir, "raft")
	if _, err := os.Stat(raftDir); err != nil {
		return ControllerRecoveryReport{}, fmt.Errorf("cluster: no Raft data in %s: %w", cfg.DataDir, err)
	}
	workers, err := raftlog.ResolveWorkers(cfg.DataDir, cfg.RaftWorkers)
	if err != nil {
		return ControllerRecoveryReport{}, err
	}
	logdb := &raftlog.Factory{}
	nhc := nodeHostConfig(&cfg, raftDir, workers, logdb)
	nhc.Expert.TransportFactory = raftnet.Silent{}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(o.Timeout, time.Minute))
	defer cancel()
	nh, err := dragonboat.NewNodeHost(nhc)
	if err != nil {
		return ControllerRecoveryReport{}, fmt.Errorf("cluster: open the Raft data (is the node still running?): %w", err)
	}
	open := true
	closeNH := func() { // dragonboat panics on a second Close
		if open {
			open = false
			nh.Close()
		}
	}
	defer closeNH()
	r, st, tail, err := readController(ctx, nh, cfg, logdb)
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
	rec := controllerRecord{Node: self, Index: r.Commit, Term: r.Term, Lost: o.Lost, LostRaftAddrs: lost, AtMs: time.Now().UnixMilli()}
	if o.Rejoin {
		base, ok := st.Nodes[o.Base]
		if !ok || base.APIAddr == "" {
			return r, fmt.Errorf("cluster: node %d, the base, has no API address in the controller's state", o.Base)
		}
		rec.Rejoin, rec.JoinVia, rec.Node = true, base.APIAddr, o.Base
		// The record before the removal: a founding node that lost its
		// controller replica without it would found a controller anew.
		if err := writeControllerRecord(cfg.DataDir, rec); err != nil {
			return r, err
		}
		if err := nh.StopReplica(controller.ShardID, uint64(self)); err != nil {
			return r, err
		}
		if err := removeReplicaData(ctx, nh, nhc.NodeHostDir, controller.ShardID, uint64(self)); err != nil {
			return r, fmt.Errorf("cluster: remove the controller replica's Raft data: %w", err)
		}
		r.Done = "rejoins"
		return r, writeControllerRole(cfg.DataDir, roleNonVoting)
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
	if err := writeControllerRecord(cfg.DataDir, rec); err != nil {
		return r, err
	}
	// tools.ImportSnapshot: the snapshot becomes the replica's, its
	// membership the one given, its log emptied up to it (ILogDB.ImportSnapshot).
	if err := tools.ImportSnapshot(nhc, exported, map[uint64]string{uint64(self): cfg.RaftAddr}, uint64(self)); err != nil {
		return r, fmt.Errorf("cluster: import the controller's state: %w", err)
	}
	if err := writeControllerRole(cfg.DataDir, roleVoter); err != nil {
		return r, err
	}
	r.Done, r.ID = "recovered", rec.ID
	return r, nil
}

// readController reads the controller replica's log state and tail from
// the offline NodeHost nh, replays the replica to its commit and returns
// its state; the replica keeps running on nh.
func readController(ctx context.Context, nh *dragonboat.NodeHost, cfg Config, logdb *raftlog.Factory) (
	r ControllerRecoveryReport, st *controller.State, tail [][]byte, err error) {
	self := uint64(cfg.NodeID)
	if !nh.HasNodeInfo(controller.ShardID, self) {
		return r, nil, nil, fmt.Errorf("cluster: node %d holds no controller replica here", cfg.NodeID)
	}
	role, err := readControllerRole(cfg.DataDir)
	if err != nil {
		return r, nil, nil, err
	}
	r = ControllerRecoveryReport{Node: cfg.NodeID, Role: string(role), Done: "status"}
	state, err := logdb.ReadTail(controller.ShardID, self, math.MaxUint64-1, 0)
	if err != nil {
		return r, nil, nil, err
	}
	r.Term, r.Commit, r.Last = state.Term, state.Commit, state.Last
	t, err := logdb.ReadTail(controller.ShardID, self, state.Commit, 64<<20)
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
	scfg := shardConfig(&cfg, controller.ShardID, self)
	scfg.IsNonVoting = role == roleNonVoting
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

// exportController exports the running controller replica's state into
// dir (dragonboat's exported snapshot) and returns the snapshot's
// directory; its index is at least commit.
func exportController(ctx context.Context, nh *dragonboat.NodeHost, dir string, commit uint64) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	idx, err := nh.SyncRequestSnapshot(ctx, controller.ShardID, dragonboat.SnapshotOption{Exported: true, ExportPath: dir})
	if err != nil {
		return "", fmt.Errorf("cluster: export the controller's state: %w", err)
	}
	if idx < commit {
		return "", fmt.Errorf("cluster: the controller's state was exported at %d, before its commit %d", idx, commit)
	}
	return filepath.Join(dir, fmt.Sprintf("snapshot-%016X", idx)), nil
}

// votersOf is the controller group's voters as the local replica's
// applied membership has them (none while dragonboat has not published it).
func votersOf(nh *dragonboat.NodeHost) []slotstore.NodeID {
	var out []slotstore.NodeID
	for _, si := range nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true}).ShardInfoList {
		if si.ShardID == controller.ShardID {
			for id := range si.Replicas {
				out = append(out, slotstore.NodeID(id))
			}
		}
	}
	slices.Sort(out)
	return out
}

// removeReplicaData removes a stopped replica's Raft data, retrying while
// dragonboat still unloads it, so that it can start again with the same
// id as a new member. dragonboat's RemoveData leaves the replica's
// snapshot directory marked deleted (internal/server/environment.go
// RemoveSnapshotDir), and StartReplica then refuses the id for good
// (nodehost.go: ErrDirMarkedAsDeleted → ErrReplicaRemoved): right for a
// replica removed from its group, not for one the recovery left out of the
// membership to rejoin, so the marked directory goes too
// (<raft>/<host>/<deployment>/snapshot-part-N/snapshot-<shard>-<replica>).
func removeReplicaData(ctx context.Context, nh *dragonboat.NodeHost, raftDir string, shard, replica uint64) error {
	for {
		err := nh.SyncRemoveData(ctx, shard, replica)
		if err == nil {
			dirs, err := filepath.Glob(filepath.Join(raftDir, "*", "*", "snapshot-part-*", fmt.Sprintf("snapshot-%d-%d", shard, replica)))
			for _, d := range dirs {
				err = errors.Join(err, os.RemoveAll(d))
			}
			return err
		}
		if !errors.Is(err, dragonboat.ErrShardNotStopped) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// snapshotMetadata is the record dragonboat keeps beside an exported
// snapshot's file (internal/server/snapshotenv.go MetadataFilename): an
// 8-byte hash, the second half of the MD5 of what follows, then the
// marshalled pb.Snapshot (internal/fileutil/utils.go CreateFlagFile).
const snapshotMetadata = "snapshot.metadata"

// asOnlyVoter rewrites the membership recorded with the exported snapshot
// in dir: the replica self (at addr) its only voter, the lost nodes
// removed, every other member out of it — a survivor left among the
// non-voting members or voters would be made removed by the import, and a
// removed replica id never comes back; out of the membership, it rejoins.
// It refuses when the voters not named lost are a majority: the quorum
// is not lost.
func asOnlyVoter(dir string, self uint64, addr string, lost []slotstore.NodeID) error {
	p := filepath.Join(dir, snapshotMetadata)
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("cluster: the exported snapshot's record: %w", err)
	}
	if len(b) < 8 {
		return errors.New("cluster: the exported snapshot's record is truncated")
	}
	if sum := md5.Sum(b[8:]); string(sum[8:]) != string(b[:8]) {
		return errors.New("cluster: the exported snapshot's record does not match its hash")
	}
	var ss pb.Snapshot
	if err := ss.Unmarshal(b[8:]); err != nil {
		return fmt.Errorf("cluster: the exported snapshot's record: %w", err)
	}
	m := ss.Membership
	var held []uint64
	for id := range m.Addresses {
		if !slices.Contains(lost, slotstore.NodeID(id)) {
			held = append(held, id)
		}
	}
	if 2*len(held) > len(m.Addresses) {
		slices.Sort(held)
		return fmt.Errorf("cluster: voters %v are not named lost: a majority of the controller's %d voters; start them instead", held, len(m.Addresses))
	}
	removed := maps.Clone(m.Removed)
	if removed == nil {
		removed = map[uint64]bool{}
	}
	for _, id := range lost {
		if _, voter := m.Addresses[uint64(id)]; voter {
			removed[uint64(id)] = true
		}
		if _, learner := m.NonVotings[uint64(id)]; learner {
			removed[uint64(id)] = true
		}
	}
	delete(removed, self)
	ss.Membership = pb.Membership{ConfigChangeId: m.ConfigChangeId, Addresses: map[uint64]string{self: addr},
		NonVotings: map[uint64]string{}, Witnesses: map[uint64]string{}, Removed: removed}
	data, err := ss.Marshal()
	if err != nil {
		return err
	}
	sum := md5.Sum(data)
	return os.WriteFile(p, append(sum[8:], data...), 0o600)
}
