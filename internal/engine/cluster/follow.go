package cluster

import (
	"context"
	"encoding/json"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// follower follows the controller's state on the node: it proposes the
// bootstrap, publishes each new routing table and config epoch, starts and
// stops the replicas the node should hold, learns live leaders, adopts the
// cluster secret, reports the node's Raft timing and notes removed nodes.
// Its loop (reconcileLoop) is the node's one background owner.
type follower struct{ n *Node }

// reconcileLoop is the node's one background owner: it runs until Close.
func (f follower) reconcileLoop() {
	defer close(f.n.done)
	ctx := f.n.life
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-f.n.stop:
			return
		case <-f.n.kick:
		case <-t.C:
		}
		f.reconcile(ctx)
		next := time.Second
		if !f.n.ctrl.Load().Bootstrapped {
			next = 4 * f.n.cfg.RTT
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
func (f follower) reconcile(ctx context.Context) {
	f.refreshControllerLeader()
	st := f.n.ctrl.Load()
	if !st.Bootstrapped {
		f.tryBootstrap(ctx)
		return
	}
	if !f.publishRoutes(st) {
		return
	}
	f.recordClusterVersion(st)
	if gate := f.n.followGate.Load(); gate != nil {
		select {
		case <-*gate:
		case <-f.n.stop:
			return
		}
	}
	if err := foundedAsLaidOut(f.n.seed, st); err != nil {
		f.n.cfg.Logger.Error("no replica starts", "err", err)
		return
	}
	f.n.replicas.Follow(ctx, st)
	// A replica here that knows no leader is woken with its group. A
	// restarted replica whose first heartbeats were lost (its peers wrote
	// into connections to its old process) campaigns unanswered — the
	// leader's lease drops its pre-votes — and dragonboat quiesces it by
	// its tick count all the same; its Quiesce message then quiesces the
	// leader too, and the group stays leaderless here until something
	// touches it (scripts' tests: 30-60 s after a restart).
	for _, g := range f.n.replicas.RefreshLeaders(st) {
		f.n.wakes.Wake(g)
	}
	f.wakeOwnLeaders()
	f.pollPeerLeaders(ctx, st)
	f.ensurePeerSecret(ctx, st)
	f.reportTiming(ctx, st) // last: a proposal may wait out its timeout
}

// wakeOwnLeaders touches this node's replicas that lead their group while
// its controller replica knows no leader: the controller lost its quorum,
// or this node is cut off. A quiesced leader checks its quorum only while
// it ticks, so one whose followers are gone would go on believing it leads
// (and say so on the node's own view, the only one left to an operator)
// until something touched it; woken, it steps down within an election
// timeout if its followers are gone, and leads on if they are not. Only
// this node's replicas are woken (a ReadIndex each), in one batch a
// reconcile round (a second).
func (f follower) wakeOwnLeaders() {
	if f.n.ctrlLeader.Load() != 0 {
		return
	}
	snap := f.n.router.Load()
	var led []slotstore.GroupID
	for id := range f.n.replicas.All() {
		if g, ok := snap.Group(id); ok && g.Leader == f.n.cfg.NodeID {
			led = append(led, id)
		}
	}
	if len(led) > 0 {
		f.n.wakes.WakeOn(f.n.cfg.NodeID, led...)
	}
}

// publishRoutes makes the router serve st's hash-slot table and config
// epochs. It runs on every controller apply (the state machine's on-change
// callback), not only in the reconcile loop: a reconcile round can spend
// seconds stopping or starting replicas, and a node that routes by a table
// older than its own controller state sends writes to a group that gives
// them back (wrong_group) until it catches up. Cheap when nothing changed:
// the table is rebuilt only for a new route revision. It reports whether
// st's table is usable.
func (f follower) publishRoutes(st *controller.State) bool {
	if !st.Bootstrapped {
		return false
	}
	cur := f.n.router.Load()
	if t := cur.Table(); t == nil || t.Revision() != st.RouteRevision {
		table, err := st.Table()
		if err != nil {
			f.n.cfg.Logger.Error("controller table unusable", "err", err)
			return false
		}
		f.n.router.SetTable(table)
	}
	for id, grp := range st.Groups {
		if g, ok := cur.Group(id); !ok || g.ConfigEpoch != grp.ConfigEpoch {
			f.n.router.SetConfigEpoch(id, grp.ConfigEpoch)
		}
	}
	return true
}

// pollPeerLeaders learns the live leaders of groups this node holds no
// replica of, from the nodes that do. Views only move forward in term (the
// router ignores older ones), so a slow or stale peer cannot roll a leader
// back. Each peer gets a short budget; a dead peer just contributes nothing.
func (f follower) pollPeerLeaders(ctx context.Context, st *controller.State) {
	missing := map[slotstore.GroupID]bool{}
	for _, id := range st.GroupIDs() {
		if f.n.replicas.Get(id) == nil {
			missing[id] = true
		}
	}
	if len(missing) == 0 {
		return
	}
	ask := map[slotstore.NodeID]string{}
	for id := range missing {
		for _, peer := range st.Groups[id].PeerNodes() {
			if node, ok := st.Nodes[peer]; ok && peer != f.n.cfg.NodeID && node.PeerAddr != "" {
				ask[peer] = node.PeerAddr
			}
		}
	}
	type answer struct{ views []peer.LeaderView }
	answers := make(chan answer, len(ask))
	for _, addr := range ask {
		go func() {
			cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			views, _ := f.n.peers.Leaders(cctx, addr)
			answers <- answer{views}
		}()
	}
	for range ask {
		a := <-answers
		for _, v := range a.views {
			if missing[v.Group] {
				f.n.router.SetLeader(v.Group, v.Leader, v.Term)
			}
		}
	}
}

func (f follower) refreshControllerLeader() {
	if leader, _, valid, err := f.n.nh.GetLeaderID(controller.ShardID); err == nil && valid {
		f.n.ctrlLeader.Store(leader)
	}
}

// tryBootstrap proposes the founding of the cluster. Every founding member
// proposes the same command; the first to commit wins, the rest are no-ops.
func (f follower) tryBootstrap(ctx context.Context) {
	if len(f.n.cfg.InitialMembers) == 0 || f.n.ctrlLeader.Load() == 0 {
		return
	}
	cmd, err := controller.EncodeCommand(controller.Command{
		TimeMs:    f.n.cfg.Now().UnixMilli(),
		Bootstrap: founding(&f.n.cfg, f.n.secrets.bootSecret(), f.n.seed),
	})
	if err != nil {
		f.n.cfg.Logger.Error("encode bootstrap", "err", err)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, f.n.cfg.RequestTimeout)
	defer cancel()
	res, err := f.n.nh.SyncPropose(cctx, f.n.nh.GetNoOPSession(controller.ShardID), cmd)
	if err != nil {
		f.n.cfg.Logger.Debug("bootstrap proposal not committed yet", "err", err)
		return
	}
	var r controller.Result
	_ = json.Unmarshal(res.Data, &r)
	f.n.cfg.Logger.Info("bootstrap proposed", "applied", r.OK, "message", r.Message)
}
