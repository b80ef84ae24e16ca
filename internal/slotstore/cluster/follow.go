package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lni/dragonboat/v4"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/fsm"
	"slotmeta/internal/slotstore/meta"
)

// reconcileLoop is the node's one background owner: it runs until Close.
func (n *Node) reconcileLoop() {
	defer close(n.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-n.kick:
		case <-t.C:
		}
		n.reconcile(ctx)
		next := time.Second
		if !n.ctrl.Load().Bootstrapped {
			next = 4 * n.cfg.RTT
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
	}
}

// reconcile makes this node follow the controller's committed state.
func (n *Node) reconcile(ctx context.Context) {
	n.refreshControllerLeader()
	st := n.ctrl.Load()
	if !st.Bootstrapped {
		n.tryBootstrap(ctx)
		return
	}
	table, err := st.Table()
	if err != nil {
		n.cfg.Logger.Error("controller table unusable", "err", err)
		return
	}
	n.router.SetTable(table)
	for _, id := range st.GroupIDs() {
		grp := st.Groups[id]
		if cur, ok := n.router.Load().Group(id); !ok || cur.ConfigEpoch != grp.ConfigEpoch {
			n.router.SetConfigEpoch(id, grp.ConfigEpoch)
		}
		want, replica, learner := n.wantReplica(st, id)
		_, running := (*n.groups.Load())[id]
		switch {
		case want && !running:
			if err := n.startGroup(st, grp, replica, learner); err != nil {
				n.cfg.Logger.Error("start group replica", "group", id, "err", err)
			}
		case !want && running:
			if err := n.stopGroup(ctx, id); err != nil {
				n.cfg.Logger.Error("stop group replica", "group", id, "err", err)
			}
		case !want && !running && n.hasGroupData(id):
			// A replica removed while this node was down, or a stopGroup
			// cut short by a restart, left its data behind.
			if err := n.clearStaleGroup(ctx, id, 0); err != nil {
				n.cfg.Logger.Error("remove data a removed replica left behind", "group", id, "err", err)
			}
		}
	}
	n.refreshLeaders(st)
	n.pollPeerLeaders(ctx, st)
}

// pollPeerLeaders learns the live leaders of groups this node holds no
// replica of, from the nodes that do. Views only move forward in term (the
// router ignores older ones), so a slow or stale peer cannot roll a leader
// back. Each peer gets a short budget; a dead peer just contributes nothing.
func (n *Node) pollPeerLeaders(ctx context.Context, st *controller.State) {
	local := *n.groups.Load()
	missing := map[slotstore.GroupID]bool{}
	for _, id := range st.GroupIDs() {
		if local[id] == nil {
			missing[id] = true
		}
	}
	if len(missing) == 0 {
		return
	}
	ask := map[slotstore.NodeID]string{}
	for id := range missing {
		for _, peer := range st.Groups[id].PeerNodes() {
			if node, ok := st.Nodes[peer]; ok && peer != n.cfg.NodeID && node.PeerAddr != "" {
				ask[peer] = node.PeerAddr
			}
		}
	}
	type answer struct{ views []leaderView }
	answers := make(chan answer, len(ask))
	for _, addr := range ask {
		go func() {
			cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			views, _ := n.peers.leaders(cctx, addr)
			answers <- answer{views}
		}()
	}
	for range ask {
		a := <-answers
		for _, v := range a.views {
			if missing[v.Group] {
				n.router.SetLeader(v.Group, v.Leader, v.Term)
			}
		}
	}
}

func (n *Node) refreshControllerLeader() {
	if leader, _, valid, err := n.nh.GetLeaderID(controller.ShardID); err == nil && valid {
		n.ctrlLeader.Store(leader)
	}
}

// tryBootstrap proposes the founding of the cluster. Every founding member
// proposes the same command; the first to commit wins, the rest are no-ops.
func (n *Node) tryBootstrap(ctx context.Context) {
	if len(n.cfg.InitialMembers) == 0 || n.ctrlLeader.Load() == 0 {
		return
	}
	cmd, err := controller.EncodeCommand(controller.Command{
		TimeMs: n.cfg.Now().UnixMilli(),
		Bootstrap: &controller.Bootstrap{
			ClusterID:         n.cfg.ClusterID,
			GroupCount:        n.cfg.GroupCount,
			ReplicationFactor: n.cfg.ReplicationFactor,
			Nodes:             n.cfg.InitialMembers,
		},
	})
	if err != nil {
		n.cfg.Logger.Error("encode bootstrap", "err", err)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, n.cfg.RequestTimeout)
	defer cancel()
	res, err := n.nh.SyncPropose(cctx, n.nh.GetNoOPSession(controller.ShardID), cmd)
	if err != nil {
		n.cfg.Logger.Debug("bootstrap proposal not committed yet", "err", err)
		return
	}
	var r controller.Result
	_ = json.Unmarshal(res.Data, &r)
	n.cfg.Logger.Info("bootstrap proposed", "applied", r.OK, "message", r.Message)
}

// wantReplica says whether this node should run a replica of group g, with
// which replica id, and whether that replica is (still) a learner: a desired
// peer runs one; so does the target of a replica move once the learner was
// added (and until the task is cancelled) — nodes act on the committed
// assignment and the replicated tasks, never on local guesses.
func (n *Node) wantReplica(st *controller.State, g slotstore.GroupID) (bool, uint64, bool) {
	grp := st.Groups[g]
	if r, ok := grp.Peers[n.cfg.NodeID]; ok {
		return true, r, false
	}
	for _, t := range st.Tasks {
		if t.Group != g || t.To != n.cfg.NodeID || t.Kind != controller.TaskReplicaMove {
			continue
		}
		switch t.Status {
		case controller.TaskRunning, controller.TaskFailed:
			if controller.TaskPhaseIndex(controller.TaskReplicaMove, t.Phase) >= controller.TaskPhaseIndex(controller.TaskReplicaMove, controller.PhaseCatchUp) {
				return true, t.NewReplicaID, controller.TaskPhaseIndex(controller.TaskReplicaMove, t.Phase) <= controller.TaskPhaseIndex(controller.TaskReplicaMove, controller.PhasePromote)
			}
		}
	}
	return false, 0, false
}

// stopGroup stops this node's replica of g and removes its data: the Raft
// log (SyncRemoveData) and the group's key span in the store. Only called
// when the controller no longer wants a replica here.
func (n *Node) stopGroup(ctx context.Context, g slotstore.GroupID) error {
	n.mu.Lock()
	lg := (*n.groups.Load())[g]
	if lg == nil {
		n.mu.Unlock()
		return nil
	}
	next := make(map[slotstore.GroupID]*localGroup, len(*n.groups.Load()))
	for id, x := range *n.groups.Load() {
		if id != g {
			next[id] = x
		}
	}
	n.groups.Store(&next)
	n.mu.Unlock()
	lg.proposer.Close()
	lg.reads.close()
	shard := controller.ShardOf(g)
	n.disrupt.forget(shard)
	if err := n.nh.StopReplica(shard, lg.replicaID); err != nil && !errors.Is(err, dragonboat.ErrShardNotFound) {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, n.cfg.RequestTimeout)
	defer cancel()
	if err := n.nh.SyncRemoveData(rctx, shard, lg.replicaID); err != nil {
		n.cfg.Logger.Warn("remove raft data of a stopped replica", "group", g, "err", err)
	}
	if err := n.deleteGroupRows(g); err != nil {
		return err
	}
	n.router.ForgetGroup(g)
	n.cfg.Logger.Info("group replica stopped and its data removed", "group", g, "replica", lg.replicaID)
	return nil
}

// hasGroupData reports whether the store holds anything of group g (its
// state machine writes its system records first, at Open).
func (n *Node) hasGroupData(g slotstore.GroupID) bool {
	_, closer, err := n.db.Pebble().Get(meta.SysKey(g, meta.SysOwned))
	if err != nil {
		return false
	}
	_ = closer.Close()
	return true
}

// clearStaleGroup removes what replicas of group g other than keep (0:
// any) left on this node: their Raft logs and the group's key span in the
// store. None of them may be running.
//
// Removing data is only safe on the controller's current word: a node that
// restarted replays its own copy of the controller state, which may be
// older than what it acted on before (and may not yet show a replica it
// already holds). So before removing anything it reads the controller state
// linearizably and leaves everything alone unless that state places no
// replica of g here other than keep.
func (n *Node) clearStaleGroup(ctx context.Context, g slotstore.GroupID, keep uint64) error {
	shard := controller.ShardOf(g)
	var others []uint64
	for _, ni := range n.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{}).LogInfo {
		if ni.ShardID == shard && ni.ReplicaID != keep {
			others = append(others, ni.ReplicaID)
		}
	}
	rows := n.hasGroupData(g)
	if len(others) == 0 && !rows {
		return nil
	}
	v, err := n.nh.SyncRead(ctx, controller.ShardID, controller.StateQuery{})
	if err != nil {
		return fmt.Errorf("read the controller state: %w", raftError(err, 0, false))
	}
	st, ok := v.(*controller.State)
	if !ok {
		return fmt.Errorf("controller state query answered %T", v)
	}
	if want, replica, _ := n.wantReplica(st, g); want && replica != keep {
		return fmt.Errorf("the controller places replica %d of group %d here: its data stays", replica, g)
	}
	for _, rid := range others {
		if err := n.nh.SyncRemoveData(ctx, shard, rid); err != nil {
			return fmt.Errorf("remove the raft data of replica %d: %w", rid, err)
		}
		n.cfg.Logger.Warn("removed the raft data an earlier replica left", "group", g, "replica", rid)
	}
	if !rows {
		return nil
	}
	if err := n.deleteGroupRows(g); err != nil {
		return err
	}
	n.cfg.Logger.Warn("removed the store data an earlier replica left", "group", g)
	return nil
}

// deleteGroupRows removes group g's key span from the store, durably.
func (n *Node) deleteGroupRows(g slotstore.GroupID) error {
	prefix := meta.GroupPrefix(g)
	return n.db.Pebble().DeleteRange(prefix, meta.PrefixEnd(prefix), pebble.Sync)
}

// startGroup starts this node's replica of grp and its proposer. A learner
// that was just added joins the group (join, non-voting); a replica that
// ran here before restarts from its own Raft state.
func (n *Node) startGroup(st *controller.State, grp *controller.Group, replica uint64, learner bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, running := (*n.groups.Load())[grp.ID]; running {
		return nil
	}
	shard := controller.ShardOf(grp.ID)
	lg := &localGroup{id: grp.ID, replicaID: replica}
	genesis := st.GenesisSlots(grp.ID)
	create := func(uint64, uint64) sm.IOnDiskStateMachine {
		s := fsm.New(fsm.Config{Group: grp.ID, DB: n.db, Genesis: genesis, OnApplied: n.metrics.applied})
		lg.sm.Store(s)
		return s
	}
	var members map[uint64]dragonboat.Target
	cfg := n.shardConfig(shard, replica)
	cfg.IsNonVoting = learner
	join := false
	restarted := n.nh.HasNodeInfo(shard, replica)
	if !restarted {
		// A new replica starts from nothing: what an earlier replica of
		// the group on this node left would be taken for its state (and
		// dragonboat refuses a new replica whose state machine is not
		// empty by panicking: "new node at non-zero index").
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
		err := n.clearStaleGroup(ctx, grp.ID, replica)
		cancel()
		if err != nil {
			return fmt.Errorf("clear what an earlier replica of group %d left: %w", grp.ID, err)
		}
		if learner {
			join = true // the learner was added to the membership: join it
		} else {
			members = map[uint64]dragonboat.Target{}
			for node, rid := range grp.Peers {
				if info, ok := st.Nodes[node]; ok {
					members[rid] = info.RaftAddr
				}
			}
		}
	}
	n.disrupt.started(shard, replica, restarted)
	if err := n.nh.StartOnDiskReplica(members, join, create, cfg); err != nil {
		n.disrupt.forget(shard)
		return err
	}
	g := grp.ID
	changed := func() context.Context { return n.router.LeaderChange(g) }
	leaderOf := func(r uint64) slotstore.NodeID {
		if grp, ok := n.ctrl.Load().Groups[g]; ok {
			node, _ := grp.NodeOfReplica(r)
			return node
		}
		return 0
	}
	rep := &raftReplicator{nh: n.nh, shard: shard, group: g, replica: replica, session: n.nh.GetNoOPSession(shard),
		leaderOf: leaderOf, changed: changed, dropped: n.metrics.droppedProposal}
	lg.proposer = NewProposer(n.cfg.Proposer, rep, n.metrics.batchObserver(g))
	lg.reads = newReadBatcher(nhReadIndex{nh: n.nh, shard: shard, changed: changed}, n.cfg.RequestTimeout)
	next := make(map[slotstore.GroupID]*localGroup, len(*n.groups.Load())+1)
	for id, g := range *n.groups.Load() {
		next[id] = g
	}
	next[grp.ID] = lg
	n.groups.Store(&next)
	n.cfg.Logger.Info("group replica started", "group", grp.ID, "replica", replica)
	return nil
}

// refreshLeaders re-reads the live leader of every local group, in case a
// leader event was missed or arrived before the replica mapping was known.
func (n *Node) refreshLeaders(st *controller.State) {
	for id := range *n.groups.Load() {
		leader, term, valid, err := n.nh.GetLeaderID(controller.ShardOf(id))
		if err != nil {
			continue
		}
		if !valid || leader == 0 {
			n.router.SetLeader(id, 0, term)
			continue
		}
		if node, ok := st.Groups[id].NodeOfReplica(leader); ok {
			n.router.SetLeader(id, node, term)
		}
	}
}
