package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/lni/dragonboat/v4"
	pb "github.com/lni/dragonboat/v4/raftpb"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/leader"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Testing is the part of a node only tests use, kept off the facade: what
// tests of other packages (end to end, chaos) must drive or look at
// directly, with no API of its own for operators. Obtain it with
// Node.Testing; it is as safe for concurrent use as the node.
type Testing struct{ n *Node }

// Testing returns the node's test hooks.
func (n *Node) Testing() Testing { return Testing{n} }

// KeyCount counts the keys the node's store holds of group g — of hash
// slot hs in it when hs is not nil (0 once a removed replica's data, or a
// released slot's rows, are gone).
func (t Testing) KeyCount(g slotstore.GroupID, hs *slotstore.HashSlot) (int, error) {
	if hs != nil {
		return t.n.db.CountKeys(meta.SlotPrefix(g, *hs))
	}
	return t.n.db.CountKeys(meta.GroupPrefix(g))
}

// ProjectOnce runs one round of the outbox projection and returns how many
// records it acknowledged: for a node started with a negative
// ProjectInterval, which projects nothing by itself.
func (t Testing) ProjectOnce(ctx context.Context) (int, error) { return t.n.projector.Once(ctx) }

// TransferControllerLeader moves the controller group's leadership to node
// target (a controller voter) and waits until this node observes it. Running
// controller tasks resume on the new leader: their state is replicated.
// (Operators move it by stopping its node; the tests of controller
// failover need it on a chosen node.)
func (t Testing) TransferControllerLeader(ctx context.Context, target slotstore.NodeID) error {
	if _, err := t.n.xfer.awaitTransfer(ctx, controller.ShardID, uint64(target), nil); err != nil {
		return err
	}
	t.n.ctrlLeader.Store(uint64(target))
	return nil
}

// HeardAgo is how long ago the node last received a Raft message from node
// target's replica of group g, and whether it ever did: on a group's leader,
// a follower not heard for many heartbeat intervals means the group is
// quiesced (or the follower cut off).
func (t Testing) HeardAgo(g slotstore.GroupID, target slotstore.NodeID) (time.Duration, bool) {
	grp, ok := t.n.ctrl.Load().Groups[g]
	if !ok {
		return 0, false
	}
	replica, ok := grp.Peers[target]
	if !ok {
		return 0, false
	}
	return t.n.heard.Ago(controller.ShardOf(g), replica)
}

// Leader is the controller leader's work on the node, for tests that drive
// its rounds (ObserveOnce, ReconcileOnce, TasksOnce, BalanceOnce) with their
// own clock, on a node started with a negative ObserveInterval.
func (t Testing) Leader() *leader.Leader { return t.n.leader }

// ControllerMembers is the controller group's membership as this node's
// replica reads it (linearizably).
func (t Testing) ControllerMembers(ctx context.Context) (voters, nonVoting []slotstore.NodeID, err error) {
	return t.n.ctl.members(ctx)
}

// SnapshotController makes this node's controller replica take a snapshot
// now (its membership then sits in the snapshot, not in the log).
func (t Testing) SnapshotController(ctx context.Context) error {
	_, err := t.n.nh.SyncRequestSnapshot(ctx, controller.ShardID, dragonboat.DefaultSnapshotOption)
	return err
}

// CompactGroup makes this node's replica of group g take a snapshot now
// and compact its Raft log up to it: the membership changes before it are
// then read from the snapshot on a restart, not replayed from the log.
func (t Testing) CompactGroup(ctx context.Context, g slotstore.GroupID) (uint64, error) {
	return t.n.nh.SyncRequestSnapshot(ctx, controller.ShardOf(g),
		dragonboat.SnapshotOption{OverrideCompactionOverhead: true, CompactionOverhead: 0})
}

// DamageReplicaState stops this node's replica of g, its data kept, and
// saves a Raft state whose commit index lies past its log's last entry: a
// damaged state the engine panics on as it loads the replica
// (internal/raft/raft.go loadState: "got out of range state"). Close the
// node next (nothing else runs the replica); started again, it cannot start
// its replica of g. It returns the commit index saved.
func (t Testing) DamageReplicaState(g slotstore.GroupID) (uint64, error) {
	r := t.n.replicas.Get(g)
	if r == nil {
		return 0, fmt.Errorf("no replica of group %d runs here", g)
	}
	shard := controller.ShardOf(g)
	if err := t.n.nh.StopReplica(shard, r.ReplicaID); err != nil {
		return 0, err
	}
	db := t.n.logdb.Raw()
	ss, err := db.GetSnapshot(shard, r.ReplicaID)
	if err != nil {
		return 0, err
	}
	rs, err := db.ReadRaftState(shard, r.ReplicaID, ss.Index)
	if err != nil {
		return 0, err
	}
	st := rs.State
	st.Commit = rs.FirstIndex + rs.EntryCount + 1000
	if err := db.SaveRaftState([]pb.Update{{ShardID: shard, ReplicaID: r.ReplicaID, State: st}}, 1); err != nil {
		return 0, err
	}
	return st.Commit, nil
}

// Store is the node's store (tests read a group's rows from it).
func (t Testing) Store() *store.DB { return t.n.db }
